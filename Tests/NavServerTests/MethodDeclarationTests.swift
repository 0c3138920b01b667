import Foundation
import JSON
import NavGraph
import NavigationCore
import Testing
@testable import NavServer

/// A store that only records what it is told (a method that writes nothing tells it nothing).
final class RecordingStore: Store {
    var told: [String] = []
    func load(graph: NavigationGraph) throws(StateError) -> [Session] { [] }
    func sessionChanged(_ s: Session) { told.append("changed \(s.name)") }
    func sessionOpened(_ s: Session) { told.append("opened \(s.name)") }
    func sessionClosed(_ name: String) { told.append("closed \(name)") }
    func factsChanged(_ s: Session, changes: JSONObject) { told.append("facts \(s.name)") }
    func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) { told.append("key \(key)") }
    /// A keyed navigation's commit is told with its key; any other as a change, as stores that keep
    /// whole sessions are told.
    func sessionCommitted(_ s: Session, changes: LentText?, compact: LentText?, key: String?) {
        guard let key else { return sessionChanged(s) }
        told.append("commit \(s.name) key \(key)")
    }
    var hasPendingWrites: Bool { false }
    func flush(graph: NavigationGraph) throws(StateError) {}
    func close() {}
}

/// Whether a method changes sessions is declared where it is registered (MethodTable.Spec), and
/// checked here against what it does: a method declared not to change writes nothing to the store,
/// whatever it is asked, and while the store cannot write exactly the changing methods are refused.
extension InProcess {
    @Suite struct MethodDeclarationTests {
        /// Params that make each method do what it does: the examples each method's declaration
        /// (`Protocol/methods/<name>.json`, assembled into the embedded OpenRPC document) gives. A
        /// method declared without one fails the test: give an example of what it does first.
        static let examples: [String: [JSONObject]] = {
            guard let document = try? JSONParser(maxDepth: 256).parse(EmbeddedProtocol.openRPC) else { return [:] }
            var examples: [String: [JSONObject]] = [:]
            for method in document["methods"]?.arrayValue ?? [] {
                guard let name = method["name"]?.stringValue else { continue }
                examples[name] = (method["examples"]?.arrayValue ?? []).map { example in
                    JSONObject(uniqueMembers: (example["params"]?.arrayValue ?? []).compactMap { p in
                        p["name"]?.stringValue.map { (key: $0, value: p["value"] ?? .null) }
                    })
                }
            }
            return examples.filter { !$0.value.isEmpty }
        }()

        @Test func everyMethodHasAnExampleOfEachFormItAnswers() {
            #expect(Self.examples["graph.export"]?.contains { $0["format"] == "json" } == true, "\(Self.examples["graph.export"] ?? [])")
            #expect(Set(Self.examples["coverage.report"]?.compactMap { $0["format"]?.stringValue } ?? []) == ["text", "lcov"])
            #expect(Self.examples.count == InProcessServer().server.methods.specs.count, "\(Self.examples.keys.sorted())")
        }

        @Test func aMethodDeclaredNotToChangeWritesNothing() throws {
            let p = InProcessServer()
            let store = RecordingStore()
            p.server.store = store
            let c = p.client()
            // Something in the tree and a pending navigation for the reading methods to read and cancel.
            _ = try p.call(c, 1, "navigate", ["to": "shop.Product", "with": ["id": "p0"]])
            var id = 10
            for spec in p.server.methods.specs {
                let examples = try #require(Self.examples[spec.name], "\(spec.name) has no example: declare what it does here")
                for params in examples where !spec.changes {
                    store.told = []
                    id += 1
                    _ = try p.call(c, id, spec.name, .object(params))
                    #expect(store.told.isEmpty, "\(spec.name) is declared not to change anything, yet told the store \(store.told)")
                }
            }
        }

        @Test func whileTheStoreCannotWriteExactlyTheChangingMethodsAreRefused() throws {
            let p = InProcessServer()
            let c = p.client()
            p.server.refusingChanges = "a test"
            var id = 0
            for spec in p.server.methods.specs {
                for params in Self.examples[spec.name] ?? [] {
                    id += 1
                    let r = try p.call(c, id, spec.name, .object(params))
                    let refused = r["error"]?["data"]?["kind"] == "unavailable"
                    #expect(refused == spec.changes, "\(spec.name): \(refused ? "refused" : "served") while the store cannot write, declared changes: \(spec.changes)")
                }
            }
        }

        /// Every method takes `session` (the contract: all take an optional session) and refuses a
        /// param it does not declare, naming it, with the declared name it is likely a typo of; a
        /// wrong type for `session` is refused even where it is accepted and not used.
        @Test func everyMethodTakesASessionAndRefusesAParamItDoesNotDeclare() throws {
            let p = InProcessServer()
            let c = p.client()
            var id = 0
            for spec in p.server.methods.specs {
                #expect(spec.params.contains("session"), "\(spec.name) does not take a session")
                id += 1
                let unknown = try p.call(c, id, spec.name, ["zzz": 1])
                #expect(unknown["error"]?["data"]?["kind"] == "invalidParams" && unknown["error"]?["data"]?["param"] == "zzz"
                        && (unknown["error"]?["message"]?.stringValue ?? "").contains("has no param \"zzz\""), "\(spec.name): \(unknown)")
                guard let declared = spec.params.first(where: { $0 != "session" && $0.count > 3 }) else { continue }
                let typo = String(declared.dropLast()) + "x"
                id += 1
                let misspelt = try p.call(c, id, spec.name, .object(JSONObject(uniqueMembers: [(key: typo, value: .int(1))])))
                let message = misspelt["error"]?["message"]?.stringValue ?? ""
                let hint = "did you mean \"\(declared)\"?"
                #expect(message.contains(hint), "\(spec.name): \(misspelt)")
            }
            for name in ["ping", "stats", "hello", "rpc.discover", "graph.describe", "session.list", "coverage.report"] {
                id += 1
                #expect(try p.call(c, id, name, ["session": "main"])["result"] != nil, "\(name)")
                id += 1
                #expect(try p.call(c, id, name, ["session": 5])["error"]?["data"]?["param"] == "session", "\(name)")
            }
        }

        /// A client holding none of the roles a method declares is refused before the method runs;
        /// every other method serves it. (uid 65534 holds no role without a policy.)
        @Test func exactlyTheMethodsDeclaringRolesRefuseAClientWithoutThem() throws {
            let p = InProcessServer()
            let stranger = p.client(uid: 65534)
            var id = 0
            for spec in p.server.methods.specs {
                for params in Self.examples[spec.name] ?? [] {
                    id += 1
                    let r = try p.call(stranger, id, spec.name, .object(params))
                    let denied = r["error"]?["data"]?["kind"] == "accessDenied" && r["error"]?["data"]?["roles"] == .array(spec.roles.map(JSONValue.string))
                    #expect(denied == !spec.roles.isEmpty, "\(spec.name): \(r)")
                }
            }
            #expect(p.server.methods.specs.filter { !$0.roles.isEmpty }.map(\.name).sorted() == ["client.kill", "client.list", "graph.reload", "provide", "slowlog.get", "slowlog.reset", "state.backup"])
        }
    }
}
