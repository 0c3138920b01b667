import ArgumentParser
import Foundation
import JSON
import NavClient

/// Names from the running navd's graph for shell completion: `section` is "coordinators" or
/// "routes". Uses `--socket` from the words typed so far; none when navd cannot be reached.
func graphNames(_ section: String) -> CompletionKind {
    .custom { words, _, prefix in
        var socket: String?
        if let i = words.firstIndex(of: "--socket"), i + 1 < words.count {
            socket = words[i + 1]
        } else if let w = words.first(where: { $0.hasPrefix("--socket=") }) {
            socket = String(w.dropFirst("--socket=".count))
        }
        guard let c = try? NavClient(socketPath: socket), let g = try? c.call("graph.describe", timeout: 2) else { return [] }
        // Candidates are data: bash's compgen -W expands $(…) and backticks in its word list, so
        // only plain names (letters, digits, _, -, .) are offered, whatever the server sends.
        return (g[section]?.objectValue?.keys.sorted() ?? []).filter { $0.hasPrefix(prefix) && isCompletable($0) }
    }
}

/// Whether a name from a server may be offered to the shell for completion: letters, digits, `_`,
/// `-` and `.`, nothing a shell expands.
func isCompletable(_ name: String) -> Bool {
    !name.isEmpty && name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "_-.".unicodeScalars.contains($0) }
}
