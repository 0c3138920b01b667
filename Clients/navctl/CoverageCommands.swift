import ArgumentParser
import Foundation
import JSON
import NavClient

// coverage: what navigations exercised of the graph (report, start, stop).

struct CoverageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coverage", abstract: "What navigations exercised of the graph: a report (the default), or start and stop a named run.",
        subcommands: [CoverageReportCommand.self, CoverageStart.self, CoverageStop.self], defaultSubcommand: CoverageReportCommand.self)
}

struct CoverageReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Print the coverage report: a table per module and what was never exercised (text), JSON, or an LCOV tracefile for genhtml.")
    @OptionGroup var common: Common
    @Option(name: .customLong("run"), help: "A named run (default: all, since navd started or the graph was reloaded).") var runName: String?
    @Option(help: "text (default), json or lcov.") var format = "text"
    func run() throws {
        guard ["text", "json", "lcov"].contains(format) else { throw usageError("--format is text, json or lcov, not \(format)") }
        var p: JSONObject = ["format": .string(format)]
        if let runName { p["run"] = .string(runName) }
        try common.run("coverage.report", p) { r in r["report"]?.stringValue ?? JSONWriter.string(r) }
    }
}

struct CoverageStart: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "start", abstract: "Start a named run (afresh if it exists); it counts until stopped.")
    @OptionGroup var common: Common
    @Argument(help: "The run's name.") var name: String
    func run() throws { try common.run("coverage.start", ["run": .string(name)]) { _ in "coverage run \(name) started" } }
}

struct CoverageStop: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop counting in a named run (kept for reports).")
    @OptionGroup var common: Common
    @Argument(help: "The run's name.") var name: String
    func run() throws { try common.run("coverage.stop", ["run": .string(name)]) { _ in "coverage run \(name) stopped" } }
}
