import Foundation
import JSON
import Logging
import NavGraph
import NavTesting
import Testing
@testable import NavServer

@Suite struct ProtocolDocumentTests {
    let document: JSONValue

    init() throws {
        let text = try String(contentsOf: Repo.file("Protocol/openrpc.json"), encoding: .utf8)
        document = try JSONParser(maxDepth: 256).parse(text)
    }

    @Test func openRPCIsValidAndEmbeddedCopyIsCurrent() throws {
        #expect(document["openrpc"]?.stringValue?.hasPrefix("1.") == true)
        #expect(document["info"]?["title"] == "navd")
        let embedded = try JSONParser(maxDepth: 256).parse(EmbeddedProtocol.openRPC)
        #expect(embedded == document, "run `make embed` after editing Protocol/openrpc.json")
    }

    @Test func everyMethodTheServerAnswersIsDocumentedAndViceVersa() throws {
        let server = Server(config: ServerConfiguration(socketPath: "/nonexistent"), graph: GraphLoader.loadEmbeddedExample().graph!, logger: Logger(label: "test"))
        let documented = Set(document["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
        let served = Set(server.methods.keys)
        #expect(served.subtracting(documented).isEmpty, "undocumented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")
        for m in document["methods"]?.arrayValue ?? [] {
            #expect(m["summary"]?.stringValue?.isEmpty == false, "\(m["name"] ?? nil) needs a summary")
        }
    }
}
