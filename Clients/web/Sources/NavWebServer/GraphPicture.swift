import Foundation

/// The graph as a picture, through graphviz's `dot -Tsvg`: the graph navd serves (`graph.export`,
/// so the picture follows `graph.reload`), or with `--graph DIR` that directory's (`navd graph DIR`).
struct GraphPicture: Sendable {
    let socketPath: String
    let navd: String
    let graph: String?

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// navd beside this executable (a build folder holds both), else on PATH.
    static func findNavd() -> String {
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for dir in [me.deletingLastPathComponent(), me.deletingLastPathComponent().appendingPathComponent("../../../../.build/debug")] {
            let candidate = dir.appendingPathComponent("navd").standardizedFileURL.path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return "navd"
    }

    func svgData() async throws -> Data {
        let dot: Data
        if let graph {
            dot = try await run(navd.contains("/") ? navd : "/usr/bin/env", (navd.contains("/") ? [] : [navd]) + ["graph", graph, "--format", "dot"])
        } else {
            let export = try await NavdConnection.call(socketPath, method: "graph.export", params: ["format": "dot"])
            guard let text = (export as? [String: Any])?["graph"] as? String else {
                throw Failure(description: "navd's graph.export answered no graph")
            }
            dot = Data(text.utf8)
        }
        return try await run("/usr/bin/env", ["dot", "-Tsvg"], input: dot)
    }

    /// How long drawing may take before the program is killed.
    static let timeout: TimeInterval = 10

    /// Runs a program to its end, off the server's threads, reading its stdout and stderr together
    /// (a program that fills one while navd reads the other cannot hang it) and killing it past
    /// ``timeout``; its standard output, or why it failed.
    private func run(_ path: String, _ args: [String], input: Data? = nil) async throws -> Data {
        try await withCheckedThrowingContinuation { (k: CheckedContinuation<Data, any Error>) in
            DispatchQueue.global().async { k.resume(with: Result { try GraphPicture.runBlocking(path, args, input: input) }) }
        }
    }

    private static func runBlocking(_ path: String, _ args: [String], input: Data?) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input == nil ? FileHandle.nullDevice : inp
        let command = ([path] + args).joined(separator: " ")
        do { try p.run() } catch { throw Failure(description: "cannot run \(command): \(error)") }
        let killer = DispatchWorkItem { if p.isRunning { p.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        defer { killer.cancel() }
        let readers = DispatchGroup()
        let errors = Collected()
        readers.enter()
        DispatchQueue.global().async {
            errors.data = err.fileHandleForReading.readDataToEndOfFile()
            readers.leave()
        }
        if let input {
            readers.enter()
            DispatchQueue.global().async {
                inp.fileHandleForWriting.write(input)
                try? inp.fileHandleForWriting.close()
                readers.leave()
            }
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        readers.wait()
        p.waitUntilExit()
        if p.terminationReason == .uncaughtSignal {
            throw Failure(description: "\(command) did not finish within \(Int(timeout)) s and was stopped")
        }
        guard p.terminationStatus == 0 else {
            throw Failure(description: "\(command) exited with \(p.terminationStatus): " + String(decoding: errors.data.prefix(2000), as: UTF8.self))
        }
        return data
    }

    func svg() async throws -> String { String(decoding: try await svgData(), as: UTF8.self) }
}

/// What a reader thread collected, handed over once the thread is done (the group's wait orders it).
private final class Collected: @unchecked Sendable {
    var data = Data()
}
