import Foundation
import NIOCore
import NIOPosix

/// A connection to navd's Unix socket: JSON-RPC messages as lines (navd's newline framing).
enum NavdConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Connects to navd at `path`.
    static func open(_ path: String) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        do {
            return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw Failure(description: "cannot connect to navd at \(path) (\(error)): is navd running? (make run, or --socket PATH)")
        }
    }

    /// One call on a connection of its own: the reply's `result` (an error reply throws).
    static func call(_ path: String, method: String, params: [String: Any] = [:]) async throws -> Any {
        let channel = try await open(path)
        return try await channel.executeThenClose { inbound, outbound in
            let request: [String: Any] = ["jsonrpc": "2.0", "id": 1, "method": method, "params": params]
            var line = try JSONSerialization.data(withJSONObject: request)
            line.append(0x0A)
            try await outbound.write(ByteBuffer(bytes: line))
            var lines = LineSplitter()
            for try await chunk in inbound {
                for l in lines.feed(chunk) {
                    guard let reply = try JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any] else { continue }
                    if let e = reply["error"] as? [String: Any] { throw Failure(description: "\(e["message"] ?? "error")") }
                    if let r = reply["result"] { return r }
                }
            }
            throw Failure(description: "navd closed the connection before answering \(method)")
        }
    }
}

/// Splits a byte stream into lines (without their newline).
struct LineSplitter {
    private var pending: [UInt8] = []
    /// The most bytes a line may hold before it is given up on (navd's replies are far smaller).
    static let maxLine = 64 << 20

    mutating func feed(_ chunk: ByteBuffer) -> [String] {
        pending.append(contentsOf: chunk.readableBytesView)
        var out: [String] = []
        var start = 0
        while let nl = pending[start...].firstIndex(of: 0x0A) {
            out.append(String(decoding: pending[start..<nl], as: UTF8.self))
            start = nl + 1
        }
        pending.removeFirst(start)
        if pending.count > LineSplitter.maxLine { pending.removeAll() }
        return out
    }
}
