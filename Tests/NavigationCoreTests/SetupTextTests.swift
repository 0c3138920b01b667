import JSON
import NavGraph
import NavTesting
import Testing
@testable import NavigationCore

/// A setup model is kept as its written text: made where `with` lies in a request, or where a saved
/// tree's params lie, it is the text the value would write, and every refusal is the value's.
@Suite struct SetupTextTests {
    static let yaml = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Item, Free, Count]}
          Item: {setup: {type: object, required: [id], properties: {id: {type: string}, tags: {type: array}}}}
          Free: {}
          Count: {setup: {type: object, properties: {n: {type: integer}}, additionalProperties: false}}
        """
    let graph = loadTestGraph(SetupTextTests.yaml)

    static let withs = [
        #"{"id":"42"}"#, #"{"id": "42"}"#, #"{"id":"a much longer id than fifteen bytes"}"#, #"{"id":"4","id":"5"}"#, #"{"id":"é"}"#,
        #"{"é":1,"id":"x"}"#, #"{"id":"x\n"}"#, #"{"id":"\u0041"}"#, #"{"id":7}"#, #"{}"#, #"{"n":2.0}"#, #"{"n":2}"#, #"{"n":-12345678901234}"#,
        #"{"n":true}"#, #"{"m":1}"#, #"{"id":"x","tags":[1,{"a":null},"b"]}"#, #"{"id":"x","tags":[]}"#, #"{"a":false,"b":null,"c":-7}"#,
    ]

    /// What a navigation from a fresh session comes to: its error, or the tree it makes, as text.
    func outcome(_ target: String, _ plan: (Session, Destination) throws(NavError) -> Plan) -> String {
        let s = Session(name: "t", graph: graph)
        do throws(NavError) {
            let destination = try graph.destination(to: target, route: nil)
            let p = try plan(s, destination)
            _ = try s.commit(p)
            var w = JSONWriter()
            s.root.write(into: &w, graph)
            return "committed \(p.paramsBytes) " + String(decoding: w.bytes, as: UTF8.self)
        } catch { return "refused \(error.kind): \(error.message)" }
    }

    @Test func aNavigationsSetupReadWhereItLiesIsTheOneReadAsAValue() throws {
        let parser = JSONParser()
        var committed = 0, refused = 0
        for target in ["Item", "Free", "Count"] {
            for text in Self.withs {
                let value = try parser.parse(text)
                let asValue = outcome(target) { s, d throws(NavError) in
                    try s.plan(d, by: nil, with: value.objectValue, from: nil, ifVersion: nil, caller: Caller())
                }
                var bytes = Array(text.utf8)
                let inPlace = bytes.withUnsafeMutableBytes { b in
                    let view = try! parser.view(UnsafeRawBufferPointer(b))
                    return outcome(target) { s, d throws(NavError) in
                        try s.plan(d, by: nil, with: nil, from: nil, ifVersion: nil, caller: Caller(), withView: view)
                    }
                }
                #expect(inPlace == asValue, "\(target) \(text)")
                if inPlace.hasPrefix("committed") {
                    committed += 1
                    #expect(inPlace.contains(JSONWriter.string(value.objectValue.map(JSONValue.object) ?? .null)), "\(inPlace)")
                } else {
                    refused += 1
                }
            }
        }
        #expect(committed > 20 && refused > 5, "\(committed) committed, \(refused) refused")
    }

    /// A saved tree's params read in place (a snapshot, a log record) restore as their value does,
    /// or are refused with the same message.
    @Test func savedParamsReadWhereTheyLieRestoreAsTheirValueDoes() throws {
        let s = Session(name: "t", graph: graph)
        _ = try s.commit(try s.plan(NavigateRequest(to: "Item", with: ["id": "42"]), caller: Caller()))
        let text = JSONWriter.string(s.root.json(graph))
        let saved = #""params":{"id":"42"}"#
        #expect(text.contains(saved))
        let parser = JSONParser(maxDepth: 256)
        func outcome(_ read: () throws(NavError) -> Session) -> String {
            do throws(NavError) {
                let r = try read()
                return "restored \(r.paramsBytes) " + JSONWriter.string(r.root.json(graph))
            } catch { return error.message }
        }
        var restored = 0, refused = 0
        for params in Self.withs + ["[]", "7", #"{"id":"42","tags":[[[[]]]]}"#] {
            let v = text.replacingOccurrences(of: saved, with: #""params":"# + params)
            let fromValue = outcome { () throws(NavError) in
                try Session(restoring: "t", graph: graph, root: try! parser.parse(v), version: s.version, nextId: s.idCounter, facts: [:],
                            limits: SessionLimits())
            }
            var t = v
            let fromView = outcome { () throws(NavError) in
                try t.withUTF8 { b in
                    Result { () throws(NavError) -> Session in
                        try Session(restoring: "t", graph: graph, root: try! parser.view(UnsafeRawBufferPointer(b)), version: s.version,
                                    nextId: s.idCounter, facts: [:], limits: SessionLimits(), keys: parser.keys)
                    }
                }.get()
            }
            #expect(fromView == fromValue, "\(params)")
            if fromView.hasPrefix("restored") { restored += 1 } else { refused += 1 }
        }
        #expect(restored > 5 && refused > 5, "\(restored) restored, \(refused) refused")
    }
}
