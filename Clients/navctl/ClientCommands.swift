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
        commandName: "kill", abstract: "Close a connection (client.kill), its number as client list gives it; it is told why first.",
        discussion: "Needs the role admin (navd's own uid holds it).")
    @OptionGroup var common: Common
    @Argument(help: "The connection's number (client list's ID).") var connection: Int
    func run() throws {
        try common.run("client.kill", ["connection": .int(connection)]) { r in "closed connection \(r["closed"]?.intValue ?? connection)" }
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
        let widths = head.indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        return rows.map { row in
            row.indices.map { i in
                let pad = String(repeating: " ", count: widths[i] - row[i].count)
                // Names and sessions to the left, numbers to the right; the last column unpadded.
                return i == row.count - 1 ? row[i] : (i == 2 ? row[i] + pad : pad + row[i])
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }.joined(separator: "\n")
    }

    /// Seconds as `42s`, `7m`, `3h`, `2d`.
    static func duration(_ s: Int) -> String {
        s < 120 ? "\(s)s" : s < 7_200 ? "\(s / 60)m" : s < 172_800 ? "\(s / 3_600)h" : "\(s / 86_400)d"
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
