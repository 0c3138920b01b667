/// A navd serving `app.Vault`, guarded by the provider precondition `vault` that its own provider
/// also recovers, and the client that provides it: front-end tests drive the navigation and answer
/// evaluate (fail), recover, evaluate (pass) through the client.
public func daemonWithAVaultAndItsProvider() throws -> (daemon: Daemon, provider: TestClient) {
    let d = try Daemon(graph: """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Vault]}
          Vault: {preconditions: [vault]}
        preconditions:
          vault: {provider: true, timeout: 60s, recover: {provider: vault}}
        """)
    let provider = try d.client()
    try provider.call("provide", ["preconditions": ["vault"]])
    return (d, provider)
}
