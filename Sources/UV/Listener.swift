import CLibUV

/// What a listening socket does whatever its kind (``PipeListener``, ``TCPListener``): hears that
/// connections wait, and accepts each into a stream of the kind it serves.
public class Listener: Handle {
    let loop: EventLoop
    private var announce: (() -> Void)?

    init(loop: EventLoop, size: Int) {
        self.loop = loop
        super.init(size: size, kind: "listener")
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }

    /// Listens; `announce` runs whenever a connection waits to be accepted.
    func startListening(backlog: Int32, _ announce: @escaping () -> Void) throws(UVError) {
        self.announce = announce
        try UVError.check(uv_listen(stream, backlog) { s, status in
            guard status >= 0 else { return }
            let me = Handle.from(s!.pointee.data, as: Listener.self)
            me.timed { me.announce?() }
        })
    }

    /// Accepts one waiting connection into `client`, closed when there was none.
    func accept<S: StreamHandle>(into client: S) throws(UVError) -> S {
        let rc = uv_accept(stream, client.stream)
        if rc < 0 {
            client.close()
            throw UVError(rc)
        }
        return client
    }

    override func didClose() { announce = nil }
}
