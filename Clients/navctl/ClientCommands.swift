import ArgumentParser
import Foundation
import JSON
import NavClient

// The commands about navd's connections: client list, client kill, clients.

/// `navctl client list|kill`: who is connected (as `redis-cli client list`, `client kill`).
struct ClientCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client", abstract: "List navd's connections, or close one.",
        subcommands: [ClientList.self, ClientKill.self])
}

struct ClientList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List navd's connections (client.list; needs the role admin, which navd's own uid holds); * marks this one.")
    @OptionGroup var common: Common
    @Option(help: "Only the connections subscribed to this session (the front-ends watching it).") var subscribedTo: String?
    func run() throws { try Clients.list(common, subscribedTo: subscribedTo) }
}

struct ClientKill: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kill", abstract: "Close a connection (client.kill), its number as client list gives it, or every one that matches filters; each is told why first.",
        discussion: """
            Needs the role admin (navd's own uid holds it). With filters (as redis-cli's client kill \
            with filters), navctl lists the connections and closes each that matches all of them, \
            never its own; one that closed meanwhile is passed over. Exit status 1 when none matched, \
            as pkill's.
            """)
    @OptionGroup var common: Common
    @Argument(help: "The connection's number (client list's ID).") var connection: Int?
    @Option(name: .customLong("client"), help: "Only connections whose hello named this client (nav-tui, nav-web, navctl or another).") var clientName: String?
    @Option(help: "Only connections of this peer uid.") var uid: Int?
    @Option(help: "Only connections subscribed to this session.") var subscribedTo: String?
    @Option(help: "Only connections navd has read nothing from for at least this many seconds.") var idle: Int?

    func validate() throws {
        let filtered = clientName != nil || uid != nil || subscribedTo != nil || idle != nil
        if connection != nil && filtered { throw ValidationError("give a connection's number or filters (--client, --uid, --subscribed-to, --idle), not both") }
        if connection == nil && !filtered { throw ValidationError("give a connection's number (navctl clients lists them) or a filter: --client, --uid, --subscribed-to or --idle") }
        if let idle, idle < 0 { throw ValidationError("--idle is \(idle); give the seconds without a read, 0 or more") }
    }

    func run() throws {
        if let connection {
            try common.run("client.kill", ["connection": .int(connection)]) { r in "closed connection \(r["closed"]?.intValue ?? connection)" }
            return
        }
        let c = try common.client()
        let (_, listed) = try common.allPages("client.list", subscribedTo.map { ["subscribedTo": .string($0)] } ?? [:], key: "clients", on: c)
        let matching = listed.filter { e in
            e["self"] != true
                && clientName.map { e["client"]?.stringValue == $0 } ?? true
                && uid.map { e["peer"]?["uid"]?.intValue == $0 } ?? true
                && idle.map { (e["idle"]?.intValue ?? 0) >= $0 } ?? true
        }
        var closed: [Int] = []
        for id in matching.compactMap({ $0["id"]?.intValue }) {
            do {
                _ = try c.call("client.kill", common.params(["connection": .int(id)]), timeout: common.timeout)
                closed.append(id)
                if !common.json { print("closed connection \(id)") }
            } catch let e as NavClientError where e.kind == "unknownTarget" {
                continue  // it closed between the list and the kill
            } catch let e as NavClientError {
                try common.fail(e)
            }
        }
        if common.json { print(JSONWriter.string(["closed": .array(closed.map { .int($0) })])) }
        if closed.isEmpty {
            FileHandle.standardError.write(Data("navctl: no connection matched (of \(listed.count) listed, this one left out)\n".utf8))
            throw ExitCode(1)
        }
    }
}

struct Clients: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List navd's connections (as client list).")
    @OptionGroup var common: Common
    @Option(help: "Only the connections subscribed to this session (the front-ends watching it).") var subscribedTo: String?
    func run() throws { try Clients.list(common, subscribedTo: subscribedTo) }

    /// Every page of `client.list` (navd answers at most 1,000 connections at a time), in order.
    static func list(_ common: Common, subscribedTo: String?) throws {
        let (answer, clients) = try common.allPages("client.list", subscribedTo.map { ["subscribedTo": .string($0)] } ?? [:], key: "clients")
        if common.json {
            print(terminalSafeJSON(JSONWriter.string(answer)))
            return
        }
        print(table(clients))
    }

    /// One line per connection, as `ps` prints processes.
    static func table(_ clients: [JSONValue]) -> String {
        let head = ["", "ID", "CLIENT", "PID", "UID", "AGE", "IDLE", "SUBS", "REQUESTS", "AWAITING", "PENDING", "OUTPUT", "SESSIONS"]
        var rows = [head]
        for e in clients {
            let subs = (e["subscribedTo"]?.arrayValue ?? []).compactMap(\.stringValue)
            let more = (e["subscriptions"]?.intValue ?? 0) - subs.count
            rows.append([
                e["self"]?.boolValue == true ? "*" : "",
                "\(e["id"]?.intValue ?? 0)",
                terminalSafe(e["client"]?.stringValue ?? "-"),
                e["peer"]?["pid"]?.intValue.map(String.init) ?? "-",
                e["peer"]?["uid"]?.intValue.map(String.init) ?? "-",
                duration(e["age"]?.intValue ?? 0),
                duration(e["idle"]?.intValue ?? 0),
                "\(e["subscriptions"]?.intValue ?? 0)",
                "\(e["requests"]?.intValue ?? 0)",
                "\(e["awaiting"]?.intValue ?? 0)",
                "\(e["pending"]?.intValue ?? 0)",
                "\(e["output"]?.intValue ?? 0)",
                terminalSafe(subs.joined(separator: ",") + (more > 0 ? ",+\(more)" : "")),
            ])
        }
        return columns(rows, left: [2])
    }
}

/// Rows as aligned columns, as `ps` prints them: the columns in `left` (names) to the left, the
/// rest (numbers) to the right, the last one unpadded.
func columns(_ rows: [[String]], left: Set<Int>) -> String {
    guard let head = rows.first else { return "" }
    let widths = head.indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
    return rows.map { row in
        row.indices.map { i in
            let pad = String(repeating: " ", count: widths[i] - row[i].count)
            return i == row.count - 1 ? row[i] : (left.contains(i) ? row[i] + pad : pad + row[i])
        }.joined(separator: "  ").trimmingTrailingSpaces()
    }.joined(separator: "\n")
}

/// Seconds as `42s`, `7m`, `3h`, `2d`.
func duration(_ s: Int) -> String {
    s < 120 ? "\(s)s" : s < 7_200 ? "\(s / 60)m" : s < 172_800 ? "\(s / 3_600)h" : "\(s / 86_400)d"
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
