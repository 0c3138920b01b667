import Foundation
import UV

/// The graph as a picture, through graphviz's `dot -Tsvg`: the graph navd serves (`graph.export`,
/// so the picture follows `graph.reload`), or with `--graph DIR` that directory's (`navd graph DIR`).
/// The programs are child processes on nav-web's loop (their output read as it comes, so a program
/// that fills one pipe cannot hang it), each killed past ``timeoutMs``.
struct GraphPicture {
    let socketPath: String
    let navd: String
    let graph: String?

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// How long drawing may take before the program is killed.
    static let timeoutMs: UInt64 = 10_000
    /// The most bytes of a picture (or of the graph in DOT) kept; a larger one is refused.
    static let maxBytes = 32 << 20

    /// navd beside this executable (a build folder holds both), else on PATH.
    static func findNavd() -> String {
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let candidate = me.deletingLastPathComponent().appendingPathComponent("navd").standardizedFileURL.path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : "navd"
    }

    /// The picture as SVG, or why it could not be drawn, once, on the loop.
    func svg(loop: EventLoop, _ done: @escaping (Result<String, Failure>) -> Void) {
        let draw: (Result<[UInt8], Failure>) -> Void = { dot in
            switch dot {
            case .failure(let f): done(.failure(f))
            case .success(let dot):
                GraphPicture.run(loop: loop, ["dot", "-Tsvg"], input: dot) { done($0.map { String(decoding: $0, as: UTF8.self) }) }
            }
        }
        if let graph {
            GraphPicture.run(loop: loop, [navd, "graph", graph, "--format", "dot"], input: [], draw)
        } else {
            NavdConnection.call(loop: loop, socketPath, method: "graph.export", params: ["format": "dot"]) { result in
                switch result {
                case .failure(let e): draw(.failure(Failure(description: e.description)))
                case .success(let export):
                    guard let text = (export as? [String: Any])?["graph"] as? String else {
                        return draw(.failure(Failure(description: "navd's graph.export answered no graph")))
                    }
                    draw(.success(Array(text.utf8)))
                }
            }
        }
    }

    /// Runs `argv` (its first word looked up in PATH) to its end with `input` on its standard
    /// input; its standard output, or why it failed.
    static func run(loop: EventLoop, _ argv: [String], input: [UInt8], _ done: @escaping (Result<[UInt8], Failure>) -> Void) {
        let command = argv.joined(separator: " ")
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        var timedOut = false
        let timer = UV.Timer(loop: loop)
        do {
            let child = try ChildProcess(loop: loop, argv: argv, environment: environment, directory: nil, input: input,
                                         outputCap: maxBytes + 1) { outcome in
                timer.close()
                if timedOut {
                    return done(.failure(Failure(description: "\(command) did not finish within \(timeoutMs / 1000) s and was stopped")))
                }
                guard outcome.status == 0 else {
                    return done(.failure(Failure(description: "\(command) exited with \(outcome.status): "
                                                 + String(decoding: outcome.stderr.prefix(2000), as: UTF8.self))))
                }
                guard outcome.stdout.count <= maxBytes else {
                    return done(.failure(Failure(description: "\(command) wrote more than \(maxBytes) bytes")))
                }
                done(.success(outcome.stdout))
            }
            timer.start(milliseconds: timeoutMs) {
                timedOut = true
                child.kill()
            }
        } catch {
            timer.close()
            done(.failure(Failure(description: "cannot run \(command): \(error.message)")))
        }
    }
}
