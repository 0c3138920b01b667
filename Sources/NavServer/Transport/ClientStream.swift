import RPC
import UV
import Unchecked

/// What a connection reads its client's bytes from and writes its output to: a Unix socket
/// (``PipeStream``) when navd serves, a ``MemoryStream`` when a test drives the server in-process.
protocol ClientStream: AnyObject {
    /// Called when all queued output has been taken (by the kernel, or by the test).
    var onDrain: (() -> Void)? { get set }
    func startReading(_ handler: @escaping StreamHandle.ReadHandler)
    func pauseReading()
    func resumeReading()
    /// Output handed over that the reader has not taken yet.
    var queuedBytes: Int { get }
    func write(_ bytes: ByteView)
    func write(_ first: ByteView, _ second: ByteView)
    /// Whether the client closed its end (not only finished sending).
    var peerHungUp: Bool { get }
    func peerCredentials() -> PeerCredentials?
    func close(then: (() -> Void)?)
    /// Closes after the queued output is taken.
    func shutdownAndClose(then: (() -> Void)?)
    /// How its input is cut into messages, for a stream with a framing of its own (its messages
    /// then carry a ``Framing/custom(_:)`` framing, and its output is framed by that format); nil:
    /// a socket's framings, newline or `Content-Length`, chosen by the client message by message.
    func messageDecoder(maxMessage: Int) -> (any MessageDecoder)?
}

extension ClientStream {
    func messageDecoder(maxMessage: Int) -> (any MessageDecoder)? { nil }
}

/// Cuts a stream's bytes into messages (see ``FrameDecoder`` for a socket's): each message is
/// handed over with its framing until the handler answers false; the bytes after it are kept for
/// ``resume(_:)``.
protocol MessageDecoder: AnyObject {
    func feed(_ input: ByteView, _ onMessage: (Framing, ByteView) -> Bool) throws(FramingError)
    func resume(_ onMessage: (Framing, ByteView) -> Bool) throws(FramingError)
    /// Whether bytes are kept: an unfinished message, or messages after a stop.
    var hasPartialMessage: Bool { get }
    /// The memory the kept bytes take (counted against `--max-total-input`).
    var heldBytes: Int { get }
    /// Forgets what is kept and reads nothing more.
    func discard()
}

extension PipeStream: ClientStream {}

/// An in-process client stream: a test feeds the bytes a client would send (``send(_:)``,
/// ``finishSending()``) and reads what navd wrote (``takeOutput()``), while the server runs on its
/// loop as it does for sockets (``Server/attach(_:)``).
final class MemoryStream: ClientStream {
    var onDrain: (() -> Void)?
    private var handler: StreamHandle.ReadHandler?
    private var reading = false
    /// Bytes sent while reading was paused, delivered when it resumes.
    private var held: [UInt8] = []
    private var endHeld = false
    /// What navd wrote, not taken yet.
    private(set) var output: [UInt8] = []
    private(set) var isClosed = false
    /// The client closed its end (a test sets it to act out a client that went away).
    var peerHungUp = false
    let credentials: PeerCredentials?

    init(credentials: PeerCredentials? = nil) { self.credentials = credentials }

    func startReading(_ handler: @escaping StreamHandle.ReadHandler) {
        self.handler = handler
        resumeReading()
    }

    func pauseReading() { reading = false }

    func resumeReading() {
        guard !isClosed, handler != nil else { return }
        reading = true
        if !held.isEmpty {
            let bytes = held
            held = []
            deliver(bytes)
        }
        if endHeld && reading {
            endHeld = false
            handler?(.end)
        }
    }

    /// Sends `text`'s bytes to navd (as one read).
    func send(_ text: String) { deliver(Array(text.utf8)) }

    private func deliver(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        guard reading, let handler else {
            held += bytes
            return
        }
        bytes.withUnsafeBytes { handler(.data(ByteView($0))) }
    }

    /// The client finished sending (it may still read).
    func finishSending() {
        if reading { handler?(.end) } else { endHeld = true }
    }

    /// What navd wrote since the last call; its queue drains.
    func takeOutput() -> [UInt8] {
        let o = output
        output = []
        if !o.isEmpty { onDrain?() }
        return o
    }

    /// The first `n` bytes navd wrote (a client that reads part of its queue); the queue drains
    /// (``onDrain``) only once it is empty, as a socket's does.
    func takeOutput(upTo n: Int) -> [UInt8] {
        let o = Array(output.prefix(n))
        output.removeFirst(o.count)
        if !o.isEmpty && output.isEmpty { onDrain?() }
        return o
    }

    var queuedBytes: Int { output.count }

    func write(_ bytes: ByteView) {
        guard !isClosed else { return }
        output += bytes.raw
    }

    func write(_ first: ByteView, _ second: ByteView) {
        write(first)
        write(second)
    }

    func peerCredentials() -> PeerCredentials? { credentials }

    func close(then: (() -> Void)?) {
        guard !isClosed else { return }
        isClosed = true
        handler = nil
        onDrain = nil
        then?()
    }

    func shutdownAndClose(then: (() -> Void)?) { close(then: then) }
}
