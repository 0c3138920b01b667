import ArgumentParser
import BuildInfo
import Foundation
import JSON
import NavClient
import RPC

// navctl: drive navd from the command line. The commands are in *Commands.swift and ProvideAndCall.swift,
// the options every command shares in Common.swift.

@main
struct Main {
    static func main() {
        let args = GlobalOptions.reorder(Array(CommandLine.arguments.dropFirst()))
        if let word = args.first, !word.hasPrefix("-") {
            let names = Navctl.configuration.subcommands.map { $0._commandName } + ["help"]
            if !names.contains(word) {
                // ArgumentParser would say "unexpected arguments"; say which commands there are, as git does.
                let hint = suggestion(for: word, among: names).map { "did you mean `\($0)`? " } ?? ""
                FileHandle.standardError.write(Data("navctl: unknown command `\(word)`; \(hint)the commands are \(names.dropLast().joined(separator: ", ")) (navctl --help)\n".utf8))
                exit(64)
            }
        }
        Navctl.main(args)
    }
}

struct Navctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "navctl",
        abstract: "Drive navd from the command line (like i3-msg or redis-cli).",
        discussion: """
            Options every subcommand takes (--socket, --session, --json, --no-color, --timeout) may \
            also come before it: navctl --session s1 tree.

            EXIT STATUS
              0    done (with --no-wait: the navigation is pending in navd)
              1    navd answered an error or ok: false, or --timeout passed
              2    navd cannot be reached, or the connection was lost
              64   a wrong command line (an option, KEY=VALUE, JSON)
              130  interrupted (Ctrl-C): the pending navigation was cancelled
            """,
        version: BuildInfo.versionLine("navctl"),
        subcommands: [Navigate.self, Route.self, Dismiss.self, Complete.self, Cancel.self, Open.self, Update.self, Reset.self, Link.self, Tree.self,
                      Watch.self, Set_.self, SessionCommand.self, Sessions.self, ClientCommand.self, Clients.self, Slowlog.self, Stats.self, Reload.self, Backup.self, CoverageCommand.self, Provide.self, Call.self])
}
