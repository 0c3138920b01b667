import ArgumentParser
import Foundation
import JSON
import NavClient

// provide (answer preconditions for navd) and call (any method, raw).

struct Provide: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Evaluate a provider precondition for navd until interrupted.")
    @OptionGroup var common: Common
    @Argument var name: String
    @Flag(help: "Answer passed.") var pass = false
    @Option(help: "Answer failed with this reason.") var fail: String?
    @Option(help: "Run this program for each request (no shell; words split on spaces), the request's params ({precondition, session, navigation, facts}) as one JSON line on its stdin: exit 0 passes, else its first line is the reason.") var exec: String?
    func validate() throws {
        guard [pass, fail != nil, exec != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --pass, --fail REASON, --exec CMD")
        }
    }
    func run() throws {
        let c = try common.client()
        let answer: (JSONValue) -> JSONValue = { request in
            if pass { return ["passed": true, "recovered": true] }
            if let fail { return ["passed": false, "recovered": false, "reason": .string(fail)] }
            let words = exec!.split(separator: " ").map(String.init)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: words[0].contains("/") ? words[0] : "/usr/bin/env")
            p.arguments = words[0].contains("/") ? Array(words.dropFirst()) : words
            let out = Pipe(), input = Pipe()
            p.standardOutput = out
            p.standardInput = input
            do { try p.run() } catch { return ["passed": false, "recovered": false, "reason": .string("cannot run \(words[0])")] }
            // What navd asks, as a command precondition's stdin carries the navigation: a program
            // that does not read it may exit first (the write then fails, which is no matter).
            // Written from another thread while this one reads: a request larger than a pipe holds,
            // to a program that writes much before it reads (or never reads), blocks neither side.
            signal(SIGPIPE, SIG_IGN)
            let line = Data((JSONWriter.string(request) + "\n").utf8)
            let writer = FileHandleWriter(input.fileHandleForWriting, line)
            writer.start()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            writer.wait()
            let first = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? "exit status \(p.terminationStatus)"
            let ok = p.terminationStatus == 0
            return ["passed": .bool(ok), "recovered": .bool(ok), "reason": .string(ok ? "" : first)]
        }
        c.requestHandler = { method, params in
            method == "precondition.evaluate" || method == "precondition.recover" ? answer(params) : nil
        }
        var kept = name
        do {
            let r = try c.call("provide", ["preconditions": [.string(name)]])
            kept = r["preconditions"]?.arrayValue?.first?.stringValue ?? name
            if r["notAsked"] != nil {
                FileHandle.standardError.write(Data("navctl: warning: the graph navd serves asks no client for \(kept) (no provider precondition or recover: {provider} has that name); check the spelling against navctl call graph.describe\n".utf8))
            }
        } catch let e as NavClientError { try common.fail(e) }
        FileHandle.standardError.write(Data("navctl: providing \(kept); Ctrl-C to stop\n".utf8))
        try c.serve()
    }
}

struct Call: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Call any method with raw JSON params; prints the JSON result.")
    @OptionGroup var common: Common
    @Argument var method: String
    @Argument var params: String?
    func run() throws {
        let p = try params.map { try parseJSON($0, what: "params").objectValue ?? [:] } ?? [:]
        try common.run(method, p) { JSONWriter.string($0) }
    }
}

/// Writes bytes to a file handle on a thread of its own, then closes it.
private final class FileHandleWriter: @unchecked Sendable {
    private let handle: FileHandle
    private let data: Data
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle, _ data: Data) { (self.handle, self.data) = (handle, data) }

    func start() {
        Thread.detachNewThread { [self] in
            // A program that exits without reading makes the write fail (EPIPE), which is no matter.
            try? handle.write(contentsOf: data)
            try? handle.close()
            done.signal()
        }
    }

    func wait() { done.wait() }
}
