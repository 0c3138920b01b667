import Foundation
import JSON
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Attacks a hostile local client, graph file or state file can mount, each answered with a clear
/// error while navd keeps serving everyone else.
@Suite(.serialized) struct HardeningTests {
    /// A graph whose command precondition writes its arguments, one per line, to `out`.
    private func argvGraph(_ dir: TempDir, out: String) throws -> String {
        let yaml = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Echo]}
              Echo:
                setup: {type: object, properties: {x: {type: string}, y: {type: string}}}
                preconditions: [record]
            preconditions:
              record: {command: [sh, -c, "printf '%s\\\\n' \\"$1\\" \\"$2\\" \\"$3\\" > \(out)", sh, "{session}", "{with.x}", "{with.y}"]}
            """
        try yaml.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        return dir.path
    }

    /// A value shaped like a placeholder is passed as written: no second scan, no loop, no growth,
    /// no other field injected. (The old expansion looped for ever on `{with.x}`.)
    @Test func placeholderShapedValuesAreNotExpandedAgain() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("args.txt")
        let d = try Daemon(arguments: ["--graph", try argvGraph(dir, out: out)])
        let c = try d.client()
        try c.call("session.open", ["name": "{with.x}"])
        let r = try c.call("navigate", ["session": "{with.x}", "to": "Echo",
                                        "with": ["x": "{with.x}{with.x}", "y": "{with.x}{session}"]], timeout: 5)
        #expect(r["version"] == 1)
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.prefix(3) == ["{with.x}", "{with.x}{with.x}", "{with.x}{session}"])
        #expect(try d.client().call("ping", timeout: 1) == "pong")
    }

    /// A NUL byte would cut the argument silently: the navigation is refused with invalidParams.
    @Test func aNULByteInASubstitutedValueIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("args.txt")
        let d = try Daemon(arguments: ["--graph", try argvGraph(dir, out: out)])
        let c = try d.client()
        let e = try c.callError("navigate", ["to": "Echo", "with": ["x": "ab\u{0}cd"]])
        #expect(e["code"] == -32602 && e["data"]?["kind"] == "invalidParams" && e["data"]?["field"] == "x", "\(e)")
        #expect(!FileManager.default.fileExists(atPath: out), "the command must not have run")
        #expect(try c.call("tree")["version"] == 0)
    }

    @Test func badHeaderIsAnInvalidRequestAndTwoContentLengthsAreRefused() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.sendRaw("Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}")
        let m = try #require(try c.readMessage())
        #expect(m["error"]?["code"] == -32600 && m["error"]?["data"]?["kind"] == "badHeader", "\(m)")
        #expect(try c.waitForClose())
        let c2 = try d.client()
        try c2.sendRaw("Content-Length: " + String(repeating: "1", count: 2000))
        let m2 = try #require(try c2.readMessage())
        #expect(m2["error"]?["data"]?["kind"] == "badHeader", "a header that never ends is refused at 1 KiB: \(m2)")
        #expect(try d.client().call("ping") == "pong")
    }

    /// `--socket` naming a regular file leaves the file alone; an over-long path is refused, not cut.
    @Test func socketPathThatIsAFileOrTooLongIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.file("precious.txt")
        try "keep me".write(toFile: file, atomically: true, encoding: .utf8)
        let d = try Daemon(socketPath: file, waitUntilServing: false)
        #expect(d.waitForExit() == 1)
        #expect(d.stderr.contains("is not a socket"), "\(d.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "keep me")

        let long = dir.path + "/" + String(repeating: "s", count: 120) + ".sock"
        let d2 = try Daemon(socketPath: long, waitUntilServing: false)
        #expect(d2.waitForExit() == 1)
        #expect(d2.stderr.contains("at most 107"), "\(d2.stderr)")
    }

    /// The default socket lives in a 0700 directory of navd's uid; a directory someone else
    /// prepared (here: open to others, or a symbolic link) is refused.
    @Test func defaultSocketDirectoryIsPrivate() throws {
        let tmp = TempDir()
        defer { tmp.remove() }
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = nil
        env["TMPDIR"] = tmp.path
        let dir = tmp.file("navd-\(getuid())")
        let d = try Daemon(socketPath: "", environment: env, waitUntilServing: false, useDefaultSocket: true)
        try d.waitForLog("navd listening")
        var st = stat()
        #expect(lstat(dir, &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(lstat(dir + "/navd.sock", &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK)
        #expect(d.stop() == 0)

        chmod(dir, 0o777)
        let open = try Daemon(socketPath: "", environment: env, waitUntilServing: false, useDefaultSocket: true)
        #expect(open.waitForExit() == 1)
        #expect(open.stderr.contains("not a private directory"), "\(open.stderr)")

        rmdir(dir)
        symlink(tmp.path, dir)
        let linked = try Daemon(socketPath: "", environment: env, waitUntilServing: false, useDefaultSocket: true)
        #expect(linked.waitForExit() == 1)
        #expect(linked.stderr.contains("not a private directory"), "\(linked.stderr)")
    }

    /// SIGTERM while a client has replies queued that it has not read yet: it still gets every one
    /// if it reads within the shutdown deadline, and one that never reads does not hold navd back.
    @Test func shutdownFlushesQueuedRepliesWithinItsDeadline() throws {
        let d = try Daemon()
        let reader = try d.client()
        let sink = try d.client()
        var burst: [UInt8] = []
        for i in 0..<30 { burst += Array(#"{"jsonrpc":"2.0","id":\#(i),"method":"graph.describe"}"#.utf8) + [10] }
        try reader.sendRaw(burst)
        try sink.sendRaw(burst)
        // stats answers after both bursts were read and answered (one connection's requests are
        // handled in order, and the loop reads every ready connection before this one's next read).
        let probe = try d.client()
        var stats = try probe.call("stats")
        while stats["requests"]?.intValue ?? 0 < 61 { stats = try probe.call("stats") }
        let start = Date()
        kill(d.pid, SIGTERM)
        var replies = 0
        while let m = try reader.readMessage(timeout: 5) {
            if m["result"]?["coordinators"] != nil { replies += 1 }
        }
        #expect(replies == 30, "a client reading during shutdown gets every reply it was owed")
        #expect(d.waitForExit() == 0)
        #expect(Date().timeIntervalSince(start) < 3, "navd took \(Date().timeIntervalSince(start)) s to stop")
    }
}
