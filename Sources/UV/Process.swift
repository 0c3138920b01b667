import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with uv_spawn, without a shell, with its stdin, stdout and stderr
/// connected to pipes. `onExit` runs once the process has exited and both output pipes reached
/// end of file, with the exit status (128 + signal when killed) and what it wrote (capped: at the
/// cap the pipe is closed, not read and discarded).
public final class ChildProcess: Handle {
    public struct Outcome {
        public let status: Int32
        public let signal: Int32
        public let stdout: [UInt8]
        public let stderr: [UInt8]
        /// Whether an output reached the cap: its pipe was then closed, so that a process writing
        /// without end costs no more reads (its next write fails: ECONNRESET on the socket pair
        /// libuv gives it, or SIGPIPE).
        public let cut: Bool
    }

    private let loop: EventLoop
    private var stdinPipe: PipeStream?
    private var outPipe: PipeStream?
    private var errPipe: PipeStream?
    private var out: [UInt8] = []
    private var err: [UInt8] = []
    private var exit: (status: Int32, signal: Int32)?
    private var openPipes = 2
    private var cut = false
    private var onExit: ((Outcome) -> Void)?
    /// Runs once when the process itself has exited (even abandoned, even while a child of its own
    /// still holds its output open): for counting the processes running.
    public var onExited: (() -> Void)?
    /// Most bytes kept of each output stream, unless the start says otherwise.
    public static let outputCap = 64 * 1024
    private let cap: Int
    public private(set) var pid: Int32 = 0

    private var proc: UnsafeMutablePointer<uv_process_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_process_t.self) }

    /// Spawns `argv` (argv[0] is looked up in the PATH of `environment`), in `directory`, writes
    /// `input` to its stdin and closes it; keeps at most `outputCap` bytes of each output.
    public init(loop: EventLoop, argv: [String], environment: [String], directory: String?, input: [UInt8],
                outputCap: Int = ChildProcess.outputCap, onExit: @escaping (Outcome) -> Void) throws(UVError) {
        self.loop = loop
        self.cap = outputCap
        self.onExit = onExit
        super.init(size: MemoryLayout<uv_process_t>.size, kind: "process")
        let sin = PipeStream(loop: loop), sout = PipeStream(loop: loop), serr = PipeStream(loop: loop)
        var stdio = [uv_stdio_container_t](repeating: uv_stdio_container_t(), count: 3)
        stdio[0].flags = uv_stdio_flags(UV_CREATE_PIPE.rawValue | UV_READABLE_PIPE.rawValue)
        stdio[0].data.stream = sin.stream
        stdio[1].flags = uv_stdio_flags(UV_CREATE_PIPE.rawValue | UV_WRITABLE_PIPE.rawValue)
        stdio[1].data.stream = sout.stream
        stdio[2].flags = uv_stdio_flags(UV_CREATE_PIPE.rawValue | UV_WRITABLE_PIPE.rawValue)
        stdio[2].data.stream = serr.stream
        let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let cEnv: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        let cDir = directory.map { strdup($0) }
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
            cDir.map { free($0) }
        }
        var rc: Int32 = 0
        cArgs.withUnsafeBufferPointer { args in
            cEnv.withUnsafeBufferPointer { env in
                stdio.withUnsafeMutableBufferPointer { st in
                    var options = uv_process_options_t()
                    options.file = UnsafePointer(args[0])
                    options.args = UnsafeMutablePointer(mutating: args.baseAddress)
                    options.env = UnsafeMutablePointer(mutating: env.baseAddress)
                    options.cwd = cDir.flatMap { UnsafePointer($0) }
                    options.stdio_count = 3
                    options.stdio = st.baseAddress
                    options.exit_cb = { p, status, signal in
                        let me = Handle.from(p!.pointee.data, as: ChildProcess.self)
                        me.exit = (Int32(truncatingIfNeeded: status), signal)
                        let exited = me.onExited
                        me.onExited = nil
                        exited?()
                        me.maybeFinish()
                    }
                    rc = uv_spawn(loop.raw, proc, &options)
                }
            }
        }
        guard rc == 0 else {
            // libuv initialised the handle: close it, and the pipes, properly.
            retainForLoop()
            close()
            sin.close(); sout.close(); serr.close()
            throw UVError(rc)
        }
        retainForLoop()
        pid = proc.pointee.pid
        stdinPipe = sin
        outPipe = sout
        errPipe = serr
        sout.startReading { [unowned self] e in self.read(e, into: \.out, pipe: sout) }
        serr.startReading { [unowned self] e in self.read(e, into: \.err, pipe: serr) }
        if !input.isEmpty { sin.write(input) }
        sin.shutdownAndClose()
        stdinPipe = nil
    }

    private func read(_ e: PipeStream.ReadEvent, into buffer: ReferenceWritableKeyPath<ChildProcess, [UInt8]>, pipe: PipeStream) {
        guard !pipe.isClosing else { return }
        switch e {
        case .data(let bytes):
            let room = cap - self[keyPath: buffer].count
            if room > 0 { self[keyPath: buffer].append(contentsOf: bytes.raw.prefix(room)) }
            if self[keyPath: buffer].count >= cap {
                cut = true
                closePipe(pipe)
            }
        case .end, .error:
            closePipe(pipe)
        }
    }

    private func closePipe(_ pipe: PipeStream) {
        pipe.close()
        openPipes -= 1
        maybeFinish()
    }

    private var finished = false

    private func maybeFinish() {
        guard let exit, openPipes == 0, !finished else { return }
        finished = true
        let cb = onExit
        onExit = nil
        outPipe = nil
        errPipe = nil
        let status = exit.signal != 0 ? 128 + exit.signal : exit.status
        close()
        guard let cb else { return }
        timed { cb(Outcome(status: status, signal: exit.signal, stdout: out, stderr: err, cut: cut)) }
    }

    /// Sends `signal` (default SIGKILL) to the process if it still runs.
    public func kill(_ signal: Int32 = 9) {
        guard exit == nil, !isClosing else { return }
        uv_process_kill(proc, signal)
    }

    /// Forgets the completion and stops the process: SIGTERM, then SIGKILL if it is still running
    /// after `graceMs`. libuv reaps it either way, so no zombie is left.
    public func abandon(graceMs: UInt64 = 1000) {
        onExit = nil
        guard exit == nil, !isClosing else { return }
        kill(15)
        let t = Timer(loop: loop).labelled("an abandoned child killed")
        t.start(milliseconds: graceMs) { [self] in
            t.close()
            self.kill(9)
        }
        t.unref()
    }
}
