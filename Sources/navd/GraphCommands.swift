import ArgumentParser
import Foundation
import JSON
import NavGraph

/// Loads `dir`, or the embedded example when nil; prints diagnostics to stderr.
func loadGraph(_ dir: String?, limits: GraphLimits = GraphLimits(), printWarnings: Bool = true) -> (NavigationGraph?, Diagnostics) {
    let (g, d) = dir.map { GraphLoader.load(directory: $0, limits: limits) } ?? GraphLoader.loadEmbeddedExample(baseDirectory: materializeExampleScripts())
    for x in d.sorted where x.severity == .error || printWarnings {
        FileHandle.standardError.write(Data((x.description + "\n").utf8))
    }
    return (g, d)
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a graph directory like a compiler: print every problem as FILE:LINE:COLUMN: error: MESSAGE.",
        discussion: "Exits 1 when there is any error, 0 otherwise (warnings alone do not fail).")

    @Argument(help: "Directory of module files (default: the embedded example app).")
    var directory: String?

    @Flag(help: "Treat warnings as errors.")
    var strict = false

    @OptionGroup var graphLimits: GraphLimitOptions

    func run() throws {
        let (graph, d) = loadGraph(directory, limits: graphLimits.limits)
        let errors = d.errors.count, warnings = d.warnings.count
        let summary = "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")"
        FileHandle.standardError.write(Data("\(directory ?? "embedded example"): \(summary)\n".utf8))
        // The process ends here: a large graph is left for the kernel to free, not taken apart.
        withExtendedLifetime(graph) { Foundation.exit(errors > 0 || (strict && warnings > 0) ? 1 : 0) }
    }
}

struct GraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Print the resolved graph: DOT for Graphviz (`navd graph DIR | dot -Tpng -o graph.png`) or JSON.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case dot, json }

    @Argument(help: "Directory of module files (default: the embedded example app).")
    var directory: String?

    @Option(help: "dot or json.")
    var format: Format = .dot

    func run() throws {
        let (g, _) = loadGraph(directory, printWarnings: false)
        guard let g else { throw ExitCode(1) }
        switch format {
        case .dot: print(g.dot(), terminator: "")
        case .json: print(String(decoding: JSONWriter.encode(g.describe()), as: UTF8.self))
        }
    }
}

/// The embedded example's command preconditions run scripts: write them to a private folder
/// (`/tmp/navd-example-<uid>`) so they exist whatever directory navd starts from.
func materializeExampleScripts() -> String {
    let dir = NSTemporaryDirectory() + "navd-example-\(getuid())"
    let fm = FileManager.default
    for (name, text) in EmbeddedExample.scripts {
        let path = dir + "/" + name
        try? fm.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                                attributes: [.posixPermissions: 0o700])
        if (try? String(contentsOfFile: path, encoding: .utf8)) != text + "\n" {
            try? (text + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        try? fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
    }
    return dir
}

/// The bounds on loading a graph (`navd serve` and `navd check`).
struct GraphLimitOptions: ParsableArguments {
    @Option(help: "Largest module file read, in bytes.")
    var maxGraphFile: Int = GraphLimits().maxFileBytes

    @Option(help: "Most YAML nodes one module file may expand to (aliases counted at every use).")
    var maxGraphNodes: Int = GraphLimits().maxNodes

    func validate() throws {
        guard maxGraphFile >= 1024 else { throw ValidationError("--max-graph-file must be at least 1024 bytes") }
        guard maxGraphNodes >= 100 else { throw ValidationError("--max-graph-nodes must be at least 100") }
    }

    var limits: GraphLimits {
        var l = GraphLimits()
        l.maxFileBytes = maxGraphFile
        l.maxNodes = maxGraphNodes
        return l
    }
}
