import Foundation
import JSON
import Logging
import NavGraph
import NavTesting
import Testing
@testable import NavServer

@Suite struct ProtocolDocumentTests {
    let document: JSONValue

    init() throws {
        let text = try String(contentsOf: Repo.file("Protocol/openrpc.json"), encoding: .utf8)
        document = try JSONParser(maxDepth: 256).parse(text)
    }

    @Test func openRPCIsValidAndEmbeddedCopyIsCurrent() throws {
        #expect(document["openrpc"]?.stringValue?.hasPrefix("1.") == true)
        #expect(document["info"]?["title"] == "navd")
        let embedded = try JSONParser(maxDepth: 256).parse(EmbeddedProtocol.openRPC)
        #expect(embedded == document, "run `make embed` after editing Protocol/openrpc.json")
    }

    @Test func everyMethodTheServerAnswersIsDocumentedAndViceVersa() throws {
        let server = Server(config: ServerConfiguration(socketPath: "/nonexistent"), graph: GraphLoader.loadEmbeddedExample().graph!, logger: Logger(label: "test"))
        let documented = Set(document["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
        let served = Set(server.methods.keys)
        #expect(served.subtracting(documented).isEmpty, "undocumented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")
        for m in document["methods"]?.arrayValue ?? [] {
            #expect(m["summary"]?.stringValue?.isEmpty == false, "\(m["name"] ?? nil) needs a summary")
        }
    }

    /// The clients call only methods navd answers: every method name NavClient, navctl, nav-tui and
    /// the Python client send is registered (a renamed or removed method fails here, not in use).
    @Test func everyMethodTheClientsCallIsRegistered() throws {
        let server = Server(config: ServerConfiguration(socketPath: "/nonexistent"), graph: GraphLoader.loadEmbeddedExample().graph!, logger: Logger(label: "test"))
        let served = Set(server.methods.keys)
        let navctl = try FileManager.default.contentsOfDirectory(atPath: Repo.root.appendingPathComponent("Clients/navctl").path)
            .filter { $0.hasSuffix(".swift") }.map { "Clients/navctl/" + $0 }
        #expect(navctl.count >= 2, "navctl's files: \(navctl)")
        let python = try FileManager.default.contentsOfDirectory(atPath: Repo.root.appendingPathComponent("Clients/python/navd_client").path)
            .filter { $0.hasSuffix(".py") }.map { "Clients/python/navd_client/" + $0 }
        #expect(python.contains("Clients/python/navd_client/client.py"), "the Python client's files: \(python)")
        let sources = ["Clients/NavClient/Calls.swift", "Clients/NavClient/NavClient.swift", "Clients/NavClient/NavLoopClient.swift",
                       "Clients/tui/App.swift"] + navctl + python
        // `NavCall("m"`, `run("m"`, `call("m"`, `send("m"`: the method is the first argument.
        let pattern = try Regex(#"(?:NavCall|run|call|send)\("([a-z][A-Za-z]*(?:\.[a-z][A-Za-z]*)?)""#)
        var called = Set<String>()
        for file in sources {
            let text = try String(contentsOf: Repo.root.appendingPathComponent(file), encoding: .utf8)
            for m in text.matches(of: pattern) { called.insert(String(m.output[1].substring ?? "")) }
        }
        #expect(called.count >= 15, "the scan finds the clients' calls: \(called.sorted())")
        #expect(called.subtracting(served).isEmpty, "the clients call methods navd does not answer: \(called.subtracting(served).sorted())")
    }

    /// What each method declares where it is registered (MethodTable.Spec) is what the document
    /// says: its params, whether it changes sessions (`x-navd-changes`), and who may call it
    /// (`x-navd-roles`).
    @Test func eachMethodsDeclarationIsTheDocuments() throws {
        let server = Server(config: ServerConfiguration(socketPath: "/nonexistent"), graph: GraphLoader.loadEmbeddedExample().graph!, logger: Logger(label: "test"))
        for m in document["methods"]?.arrayValue ?? [] {
            let name = try #require(m["name"]?.stringValue)
            guard let spec = server.methods[name]?.spec else { continue }  // the test above reports it
            let documented = Set(m["params"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
            #expect(documented == Set(spec.params), "\(name): documented params \(documented.sorted()), read \(spec.params.sorted())")
            #expect(m["x-navd-changes"]?.boolValue == spec.changes, "\(name): x-navd-changes \(m["x-navd-changes"] ?? .null), registered \(spec.changes)")
            let roles = m["x-navd-roles"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(roles == spec.roles, "\(name): x-navd-roles \(roles), registered \(spec.roles)")
        }
    }
}
