import Foundation
import JSON
import NavTesting
import RPC
import Testing

/// Every error kind is defined once (``ErrorKind``); the documents list exactly those kinds with
/// their codes.
@Suite struct ErrorTableTests {
    /// `| -32001 | `unknownTarget` | … |` rows of PROTOCOL.md's error table.
    func protocolTable() throws -> [String: Int] {
        let text = try String(contentsOf: Repo.file("Protocol/PROTOCOL.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## 4. Errors").dropFirst().first?.components(separatedBy: "\n## ").first)
        var rows: [String: Int] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| -32") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let code = Int(cells[0]) else { continue }
            let kind = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            #expect(rows[kind] == nil, "PROTOCOL.md lists \(kind) twice")
            rows[kind] = code
        }
        return rows
    }

    @Test func protocolMDListsEveryKindWithItsCode() throws {
        let documented = try protocolTable()
        let defined = Dictionary(uniqueKeysWithValues: ErrorKind.allCases.filter { !$0.isInternal }.map { ($0.rawValue, $0.code) })
        #expect(documented == defined, "PROTOCOL.md section 4 and ErrorKind differ: documented \(documented.sorted { $0.key < $1.key }), defined \(defined.sorted { $0.key < $1.key })")
    }

    @Test func openRPCErrorsNameKindsWithTheirCodes() throws {
        let doc = try JSONParser(maxDepth: 256).parse(try String(contentsOf: Repo.file("Protocol/openrpc.json"), encoding: .utf8))
        var named: Set<String> = []
        for (name, e) in doc["components"]?["errors"]?.objectValue ?? [:] {
            let code = try #require(e["code"]?.intValue)
            // A component names its kinds in data.kind, or lists them as "(data.kind: a, b)".
            var kinds = [name]
            if let m = e["message"]?.stringValue, let list = m.components(separatedBy: "data.kind: ").dropFirst().first {
                kinds = list.trimmingCharacters(in: CharacterSet(charactersIn: ")")).components(separatedBy: ", ")
            }
            for k in kinds {
                let kind = try #require(ErrorKind(rawValue: k), "openrpc.json names error kind \(k), which navd does not define")
                #expect(kind.code == code, "openrpc.json gives \(k) code \(code), ErrorKind \(kind.code)")
                named.insert(k)
            }
        }
        let missing = ErrorKind.allCases.filter { !$0.isInternal && !named.contains($0.rawValue) }.map(\.rawValue)
        #expect(missing.isEmpty, "openrpc.json's components.errors do not name \(missing)")
    }

    @Test func anErrorCarriesItsKindFirstAndTheCodeFromTheList() {
        let e = RPCError(.preconditionFailed, "no", data: ["kind": "forged", "precondition": "p"])
        #expect(e.code == -32005 && e.kind == "preconditionFailed")
        #expect(e.data.map(\.key) == ["kind", "precondition"])
    }
}
