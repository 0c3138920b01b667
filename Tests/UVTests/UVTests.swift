import Foundation
import NavTesting
import Testing
import UV

/// The libuv layer on its own: timers, a listening socket and a connection, a poll handle, a child process.
@Suite struct UVTests {
    @Test func timersFireInOrderAndAClosedTimerNever() {
        let loop = EventLoop()
        var fired: [String] = []
        let late = Timer(loop: loop), early = Timer(loop: loop), closed = Timer(loop: loop)
        late.start(milliseconds: 20) {
            fired.append("late")
            late.close()
        }
        early.start(milliseconds: 1) {
            fired.append("early")
            early.close()
        }
        closed.start(milliseconds: 5) { fired.append("closed") }
        closed.close()
        loop.run()
        #expect(fired == ["early", "late"])
        #expect(loop.close())
    }

    /// A prepare handle runs once an iteration before the loop polls, a check handle once after:
    /// they take turns, the prepare first, whatever else the iterations run (the last iteration
    /// may end between them: the timer that closes both runs before or after the poll, as libuv's
    /// version orders it).
    @Test func aPrepareRunsBeforeEachPollAndACheckAfterIt() {
        let loop = EventLoop()
        var seen: [String] = []
        let prepare = Prepare(loop: loop), check = Check(loop: loop), timer = Timer(loop: loop)
        prepare.start { seen.append("prepare") }
        check.start { seen.append("check") }
        var ticks = 0
        timer.start(milliseconds: 1, repeat: 1) {
            ticks += 1
            guard ticks == 3 else { return }
            prepare.close()
            check.close()
            timer.close()
        }
        loop.run()
        #expect(seen.count >= 4, "\(seen)")
        #expect(seen.enumerated().allSatisfy { i, e in e == (i.isMultiple(of: 2) ? "prepare" : "check") }, "\(seen)")
        #expect(loop.close())
    }

    /// A handle closed after the loop's last iteration (a stop, then the server's last closes) has
    /// its close callback still to run: the loop runs it and closes. A handle left open keeps the
    /// loop from closing, and is named.
    @Test func aLoopClosesAfterItsLastHandlesCloseCallbacksAndNamesALeftHandle() {
        let loop = EventLoop()
        let left = Timer(loop: loop)
        left.start(milliseconds: 60_000) {}
        #expect(loop.openHandles == ["timer"])
        #expect(!loop.close(), "an open handle keeps the loop from closing")
        left.close()
        #expect(loop.openHandles.isEmpty)
        #expect(loop.close(), "the handle closed last is released, then the loop closes")
        #expect(loop.openHandles.isEmpty && loop.close(), "a closed loop has nothing open and closes again at once")
    }

    @Test func aDescriptorClosedInTheBackgroundIsClosedByTheTimeTheLoopCloses() {
        // One end of a socket pair, closed on the thread pool. Close-on-exec from the start: no
        // child another test starts inherits it.
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        defer { close(fds[0]) }
        var before = stat()
        #expect(fstat(fds[1], &before) == 0)
        let loop = EventLoop()
        loop.closeInBackground(fds[1])
        #expect(loop.close(), "the loop waits for the close, then closes")
        // This process's descriptor is closed: gone, or its number already reused by another
        // test's open (another file).
        var after = stat()
        let same = fstat(fds[1], &after) == 0 && after.st_dev == before.st_dev && after.st_ino == before.st_ino
        #expect(!same, "the descriptor is closed when close() returns")
        // The other end then reads the end of the stream. Not at once: another test may fork
        // just before the close, and its child holds a copy of every descriptor until it runs
        // its program (close-on-exec takes effect at exec, not at fork).
        var p = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        #expect(poll(&p, 1, 30_000) == 1, "the other end becomes readable")
        var byte: UInt8 = 0
        #expect(recv(fds[0], &byte, 1, Int32(MSG_DONTWAIT)) == 0, "end of file: the other end is closed")
    }

    @Test func aPollHandleReportsAForeignSocketReadableThenWritable() throws {
        // A descriptor libuv does not own (as libpq's socket is): the handle only says when it is
        // ready. Close-on-exec: the children other tests start do not keep the pair.
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let loop = EventLoop()
        let poll = try Poll(loop: loop, fd: fds[0])
        var seen: [String] = []
        poll.start([.readable]) { events, status in
            #expect(status == 0)
            guard events.contains(.readable) else { return }
            var buf = [UInt8](repeating: 0, count: 16)
            let n = read(fds[0], &buf, buf.count)
            seen.append(String(decoding: buf[0..<max(0, n)], as: UTF8.self))
            poll.start([.writable]) { events, _ in
                if events.contains(.writable) { seen.append("writable") }
                poll.close()
            }
        }
        _ = "ping".withCString { write(fds[1], $0, 4) }
        loop.run()
        #expect(seen == ["ping", "writable"])
        #expect(loop.close())
    }

    @Test func aListenerAcceptsAConnectionThatSendsBytes() throws {
        let loop = EventLoop()
        let path = NSTemporaryDirectory() + "uv-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let listener = PipeListener(loop: loop)
        try listener.bind(path: path)
        var received: [UInt8] = []
        var server: PipeStream?
        var peerUid: UInt32?
        try listener.listen { l in
            guard let s = try? l.accept() else { return }
            server = s
            peerUid = s.peerCredentials()?.uid
            s.startReading { event in
                switch event {
                case .data(let bytes): received += bytes
                case .end, .error:
                    s.close()
                    listener.close()
                }
            }
        }
        var connectError: UVError?
        var client: PipeStream?
        client = PipeStream.connect(loop: loop, path: path) { s, error in
            connectError = error
            let hello = Array("hello\n".utf8)
            s.write(hello)
            s.shutdownAndClose {}
        }
        loop.run()
        #expect(connectError == nil)
        #expect(String(decoding: received, as: UTF8.self) == "hello\n")
        #expect(peerUid == getuid())
        _ = (server, client)
    }

    /// A Unix listener whose queue of connections not yet accepted is full answers a non-blocking
    /// connect at once with EAGAIN; `PipeStream.connect` tries again, as a blocking connect waits,
    /// and connects once the listener accepts; past its patience it says EAGAIN, and a stream closed
    /// meanwhile ends its connect with ECANCELED.
    @Test func aConnectToAFullQueueWaitsForRoom() throws {
        let path = NSTemporaryDirectory() + "uv-test-\(getpid())-full-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        // A listener made by hand that accepts only when the test says: a queue of one (listen(0)
        // leaves room for one connection not yet accepted), filled by a first client.
        let listening = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listening) }
        let address = UnixSocketAddress(path)
        let bound = address.bind(listening)
        #expect(bound == 0 && listen(listening, 0) == 0)
        func rawConnect() -> (fd: Int32, errno: Int32) {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            let rc = address.connect(fd)
            let e = errno
            if rc != 0 { close(fd) }
            return (rc == 0 ? fd : -1, rc == 0 ? 0 : e)
        }
        // Fill the queue until a connect says EAGAIN.
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        while held.count < 8 {
            let (fd, e) = rawConnect()
            if fd < 0 { #expect(e == EAGAIN); break }
            held.append(fd)
        }
        #expect(!held.isEmpty && held.count < 8, "the queue of a listen(0) is full after a connection or two")

        let loop = EventLoop()
        var result: [String] = []
        let patient = PipeStream.connect(loop: loop, path: path) { s, error in
            result.append(error.map { "patient: \($0.name)" } ?? "patient: connected")
            s.close()
        }
        let hasty = PipeStream.connect(loop: loop, path: path, patience: 20) { s, error in
            result.append(error.map { "hasty: \($0.name)" } ?? "hasty: connected")
            s.close()
        }
        let closed = PipeStream.connect(loop: loop, path: path) { s, error in
            result.append(error.map { "closed: \($0.name)" } ?? "closed: connected")
        }
        // The first attempts (on the loop's next turn) find the queue full: nobody is answered yet.
        loop.runOnce(wait: false)
        #expect(result.isEmpty, "\(result)")
        closed.close()
        // The hasty one gives up after its 20 ms, the closed one at its next attempt; the patient
        // one still waits.
        while result.count < 2 { loop.runOnce(wait: true) }
        #expect(Set(result) == ["hasty: EAGAIN", "closed: ECANCELED"], "\(result)")
        // Room in the queue: the listener accepts the connections it holds.
        for _ in held {
            let fd = accept(listening, nil, nil)
            #expect(fd >= 0)
            close(fd)
        }
        while result.count < 3 { loop.runOnce(wait: true) }
        #expect(result.last == "patient: connected", "\(result)")
        let accepted = accept(listening, nil, nil)
        #expect(accepted >= 0, "the patient client's connection waits in the queue")
        close(accepted)
        loop.run()
        #expect(loop.close())
        _ = (patient, hasty)
    }

    /// A connect says why it failed: no socket file, or a socket file nobody listens on.
    @Test func aConnectThatCannotSucceedSaysWhy() throws {
        let loop = EventLoop()
        let dir = NSTemporaryDirectory() + "uv-test-\(getpid())-refused-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A socket file whose listener is gone: bound, then closed without listening.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = UnixSocketAddress(dir + "/stale.sock").bind(stale)
        close(stale)
        #expect(bound == 0)
        var errors: [String: String] = [:]
        for name in ["missing.sock", "stale.sock"] {
            _ = PipeStream.connect(loop: loop, path: dir + "/" + name) { s, error in
                errors[name] = error?.name ?? "connected"
                s.close()
            }
        }
        loop.run()
        #expect(errors == ["missing.sock": "ENOENT", "stale.sock": "ECONNREFUSED"])
        #expect(loop.close())
    }

    /// libuv turns bind's ENOENT into EACCES; the wrapper gives back what it was: no such directory.
    @Test func bindingInADirectoryThatDoesNotExistIsNotFound() {
        let loop = EventLoop()
        let listener = PipeListener(loop: loop)
        let path = NSTemporaryDirectory() + "uv-test-\(getpid())-missing-\(UInt32.random(in: 0...UInt32.max))/x.sock"
        #expect(throws: UVError.notFound) { try listener.bind(path: path) }
        listener.close()
        loop.run()
        #expect(loop.close())
    }

    @Test func aChildProcessRunsWithItsInputAndIsReaped() throws {
        let loop = EventLoop()
        var outcome: ChildProcess.Outcome?
        let p = try ChildProcess(loop: loop, argv: ["/bin/cat"], environment: ["PATH=/bin:/usr/bin"], directory: nil,
                                 input: Array("from stdin".utf8)) { outcome = $0 }
        loop.run()
        #expect(outcome?.status == 0 && outcome?.signal == 0)
        #expect(outcome.map { String(decoding: $0.stdout, as: UTF8.self) } == "from stdin")
        _ = p
    }

    /// At the output's cap the pipe is closed: a process writing without end sees its write fail
    /// rather than being read (and its bytes thrown away) for as long as it runs.
    @Test func aProcessWritingWithoutEndIsCutOffAtTheCap() throws {
        let loop = EventLoop()
        var outcome: ChildProcess.Outcome?
        let p = try ChildProcess(loop: loop, argv: ["yes"], environment: ["PATH=/bin:/usr/bin"], directory: nil,
                                 input: [], outputCap: 4096) { outcome = $0 }
        let guardTimer = Timer(loop: loop)
        guardTimer.start(milliseconds: 20_000) { p.kill(9); guardTimer.close() }
        guardTimer.unref()
        loop.run()
        if !guardTimer.isClosing { guardTimer.close(); loop.run() }
        // Its next write fails (the pipe is a socket pair: ECONNRESET, or SIGPIPE), so it ends
        // at once; still read, it would run until the guard's SIGKILL.
        #expect(outcome != nil && outcome?.signal != SIGKILL, "ended by signal \(String(describing: outcome?.signal))")
        #expect(outcome?.cut == true && outcome?.stdout.count == 4096)
    }

    @Test func aProgramThatCannotStartIsAnError() {
        let loop = EventLoop()
        #expect(throws: UVError.self) {
            _ = try ChildProcess(loop: loop, argv: ["/nonexistent/program"], environment: [], directory: nil, input: []) { _ in }
        }
        loop.run()
    }

    /// A TCP listener on port 0 learns its port, accepts, reads; the write side shut, the peer
    /// reads what was written, then its end.
    @Test func aTCPListenerOnAnyPortAcceptsAndShutsItsWriteSide() throws {
        let loop = EventLoop()
        let listener = TCPListener(loop: loop)
        var received: [UInt8] = []
        var accepted: TCPStream?
        try listener.listen(host: "127.0.0.1", port: 0) { l in
            guard let s = try? l.accept() else { return }
            accepted = s
            s.startReading { event in
                switch event {
                case .data(let bytes):
                    received += bytes
                    s.write(Array("bye".utf8))
                    s.shutdownWriting()
                case .end, .error:
                    s.close()
                    listener.close()
                }
            }
        }
        let port = listener.port
        #expect(port > 0)
        let other = EventLoop()
        let taken = TCPListener(loop: other)
        #expect(throws: UVError.addressInUse) { try taken.listen(host: "127.0.0.1", port: port) { _ in } }
        taken.close()
        other.run()
        let fd = try #require(Self.connectTCP(port: port))
        defer { close(fd) }
        _ = Array("hi".utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        // The loop runs until the server's side has answered, shut its side and seen the client's end.
        let timer = Timer(loop: loop)
        var answer: [UInt8] = []
        timer.start(milliseconds: 10, repeat: 10) {
            var buf = [UInt8](repeating: 0, count: 64)
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { answer += buf[0..<n] }
            if n == 0 {
                shutdown(fd, Int32(SHUT_WR))
                timer.close()
            }
        }
        loop.run()
        #expect(String(decoding: received, as: UTF8.self) == "hi")
        #expect(String(decoding: answer, as: UTF8.self) == "bye", "the answer, then the end of the stream")
        _ = accepted
    }

    /// Writes still queued when a stream is closed are cancelled without telling `onDrain`: its
    /// owner, gone with the close, is not called back.
    @Test func aClosedStreamsCancelledWritesDoNotDrain() throws {
        let loop = EventLoop()
        let listener = TCPListener(loop: loop)
        var drained = 0
        try listener.listen(host: "127.0.0.1", port: 0) { l in
            guard let s = try? l.accept() else { return }
            s.onDrain = { drained += 1 }
            // More than the socket takes at once: the rest is queued, and the peer never reads.
            s.write([UInt8](repeating: 0x61, count: 16 << 20))
            #expect(s.queuedBytes > 0)
            s.close()
            listener.close()
        }
        let fd = try #require(Self.connectTCP(port: listener.port))
        defer { close(fd) }
        loop.run()
        #expect(drained == 0)
    }

    /// A blocking TCP connection to 127.0.0.1:`port` (a listening socket completes it before its
    /// loop runs), or nil.
    static func connectTCP(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
