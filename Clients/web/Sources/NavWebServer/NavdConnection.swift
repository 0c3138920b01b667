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

    /// One call on a connection of its own: the reply's `result` (an error reply throws); past
    /// `timeout` it throws and the connection is closed.
    static func call(_ path: String, method: String, params: [String: Any] = [:], timeout: Duration = .seconds(10)) async throws -> Any {
        let request: [String: Any] = ["jsonrpc": "2.0", "id": 1, "method": method, "params": params]
        let line = try JSONSerialization.data(withJSONObject: request)
        let reply = try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask { try await exchange(path, method: method, line: line) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Failure(description: "navd at \(path) did not answer \(method) within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any] else {
            throw Failure(description: "navd answered \(method) with something that is not a JSON-RPC reply")
        }
        if let e = object["error"] as? [String: Any] { throw Failure(description: "\(e["message"] ?? "error")") }
        guard let result = object["result"] else { throw Failure(description: "navd's reply to \(method) has no result") }
        return result
    }

    /// Sends `request` on a connection of its own; answers the reply's line.
    private static func exchange(_ path: String, method: String, line request: Data) async throws -> String {
        let channel = try await open(path)
        return try await channel.executeThenClose { inbound, outbound in
            var line = request
            line.append(0x0A)
            try await outbound.write(ByteBuffer(bytes: line))
            var lines = LineSplitter()
            for try await chunk in inbound {
                for l in lines.feed(chunk) where l.hasPrefix("{") && !l.contains("\"method\"") { return l }
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
