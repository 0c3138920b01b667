import Foundation
import UV

/// Calls to navd's Unix socket from nav-web's loop: JSON-RPC messages as lines (navd's newline
/// framing), each call on a connection of its own.
enum NavdConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The most bytes a reply may take before the call is given up (navd's `stats` and
    /// `graph.export` answers are far smaller).
    static let maxReply = 64 << 20

    /// Calls `method` on navd at `path`; `done` gets the reply's `result`, or the failure (an error
    /// reply, no navd, no answer within `timeoutMs`), once, on the loop.
    static func call(loop: EventLoop, _ path: String, method: String, params: [String: Any] = [:], timeoutMs: UInt64 = 10_000,
                     _ done: @escaping (Result<Any, Failure>) -> Void) {
        let request: [String: Any] = ["jsonrpc": "2.0", "id": 1, "method": method, "params": params]
        guard var line = try? JSONSerialization.data(withJSONObject: request) else {
            return done(.failure(Failure(description: "cannot encode the \(method) request")))
        }
        line.append(0x0A)
        let call = Call(done)
        let timer = UV.Timer(loop: loop)
        call.timer = timer
        timer.start(milliseconds: timeoutMs) {
            call.finish(.failure(Failure(description: "navd at \(path) did not answer \(method) within \(timeoutMs / 1000) s")))
        }
        call.stream = PipeStream.connect(loop: loop, path: path) { stream, error in
            if let error {
                return call.finish(.failure(Failure(description: "cannot connect to navd at \(path) (\(error.message)): is navd running? (make run, or --socket PATH)")))
            }
            var lines = LineSplitter()
            stream.startReading { event in
                switch event {
                case .data(let bytes):
                    for l in lines.feed(bytes.raw) where l.hasPrefix("{") && !l.contains("\"method\"") {
                        return call.finish(reply(l, method: method))
                    }
                    if lines.pendingCount > maxReply {
                        call.finish(.failure(Failure(description: "navd's answer to \(method) passes \(maxReply) bytes")))
                    }
                case .end, .error:
                    call.finish(.failure(Failure(description: "navd closed the connection before answering \(method)")))
                }
            }
            stream.write(Array(line))
        }
    }

    /// The `result` of a reply line, or its error.
    static func reply(_ line: String, method: String) -> Result<Any, Failure> {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            return .failure(Failure(description: "navd answered \(method) with something that is not a JSON-RPC reply"))
        }
        if let e = object["error"] as? [String: Any] { return .failure(Failure(description: "\(e["message"] ?? "error")")) }
        guard let result = object["result"] else { return .failure(Failure(description: "navd's reply to \(method) has no result")) }
        return .success(result)
    }

    /// One call in flight: finished once, by its reply, its failure or its timer.
    private final class Call {
        var done: ((Result<Any, Failure>) -> Void)?
        var stream: PipeStream?
        var timer: UV.Timer?
        init(_ done: @escaping (Result<Any, Failure>) -> Void) { self.done = done }

        func finish(_ result: Result<Any, Failure>) {
            guard let d = done else { return }
            done = nil
            timer?.close()
            timer = nil
            stream?.close()
            stream = nil
            d(result)
        }
    }
}

/// Splits a byte stream into lines (without their newline).
struct LineSplitter {
    private var pending: [UInt8] = []

    /// Bytes of a line not yet ended.
    var pendingCount: Int { pending.count }

    /// Calls `body` with each line `chunk` ends (valid until it returns); only the chunk's own
    /// bytes are searched for a newline.
    mutating func forEachLine(_ chunk: some Collection<UInt8>, _ body: (ArraySlice<UInt8>) -> Void) {
        var from = pending.count
        pending.append(contentsOf: chunk)
        var start = 0
        while let nl = pending[from...].firstIndex(of: 0x0A) {
            body(pending[start..<nl])
            start = nl + 1
            from = start
        }
        pending.removeFirst(start)
    }

    /// The lines `chunk` ends.
    mutating func feed(_ chunk: some Collection<UInt8>) -> [String] {
        var out: [String] = []
        forEachLine(chunk) { out.append(String(decoding: $0, as: UTF8.self)) }
        return out
    }
}
