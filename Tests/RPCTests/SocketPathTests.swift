import Testing
@testable import RPC

/// The default socket path navd and every client share.
@Suite struct SocketPathTests {
    @Test func anAbsoluteRuntimeDirectoryHoldsTheSocketAndAnyOtherIsIgnored() {
        #expect(SocketPath.defaultPath(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], uid: 1000) == "/run/user/1000/navd.sock")
        // Empty or relative: not a runtime directory (the XDG specification), so the fallback.
        for dir in ["", "run/user/1000", "./x"] {
            #expect(SocketPath.defaultPath(environment: ["XDG_RUNTIME_DIR": dir], uid: 1000) == "/tmp/navd-1000.sock", "\(dir)")
        }
        #expect(SocketPath.defaultPath(environment: [:], uid: 7) == "/tmp/navd-7.sock")
    }

    @Test func aClientTakesItsOptionThenNAVD_SOCKETThenTheDefault() {
        let env = ["NAVD_SOCKET": "/srv/navd.sock", "XDG_RUNTIME_DIR": "/run/user/0"]
        #expect(SocketPath.clientPath(explicit: "/a.sock", environment: env) == "/a.sock")
        #expect(SocketPath.clientPath(explicit: nil, environment: env) == "/srv/navd.sock")
        #expect(SocketPath.clientPath(explicit: nil, environment: ["NAVD_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/0"]) == "/run/user/0/navd.sock")
    }
}
