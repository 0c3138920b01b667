import Foundation

/// The graph as a picture: `navd graph [DIR] --format dot` through graphviz's `dot -Tsvg`.
struct GraphPicture: Sendable {
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
        let dot = try run(navd.contains("/") ? navd : "/usr/bin/env", (navd.contains("/") ? [] : [navd]) + ["graph"] + (graph.map { [$0] } ?? []) + ["--format", "dot"])
        return try run("/usr/bin/env", ["dot", "-Tsvg"], input: dot)
    }

    /// Runs a program to its end; its standard output, or why it failed.
    private func run(_ path: String, _ args: [String], input: Data? = nil) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input == nil ? FileHandle.nullDevice : inp
        do { try p.run() } catch { throw Failure(description: "cannot run \(([path] + args).joined(separator: " ")): \(error)") }
        if let input {
            inp.fileHandleForWriting.write(input)
            try? inp.fileHandleForWriting.close()
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw Failure(description: "\(([path] + args).joined(separator: " ")) exited with \(p.terminationStatus): "
                          + String(decoding: errors.prefix(2000), as: UTF8.self))
        }
        return data
    }

    func svg() async throws -> String { String(decoding: try await svgData(), as: UTF8.self) }
}
