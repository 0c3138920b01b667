import JSON
import NavGraph
import NavigationCore
import RPC
import Testing
import Unchecked
@testable import NavServer

/// A method's params decoded from a ``DecodingContext`` alone: the graph's names, the setup-key
/// cache and the limits, with no server, dispatcher or navigator. `navigate`'s decoding is the
/// largest; what it cannot answer from the context (a name the graph does not know) is left for
/// the navigator, as its request.
@Suite struct DecodingTests {
    let graph = NavigatorTests.graph
    let state = SessionState(Session(name: "main", graph: NavigatorTests.graph), ref: 1, audience: RecordingPublisher.Members(), recordsAlways: .nothing)
    let scratch = ScratchWords(count: NavigateParam.allCases.count)

    func context(maxName: Int = 256) -> DecodingContext {
        var limits = NavigatorLimits()
        limits.maxName = maxName
        return DecodingContext(graph: graph, limits: limits)
    }

    /// Decodes `params` (a JSON object's text) as `navigate`'s and hands the request to `body`, or
    /// answers the error.
    func decode(_ params: String, _ context: DecodingContext, _ body: (borrowing NavigateRequest) -> Void = { _ in }) -> RPCError? {
        let parser = JSONParser(), method = JSONParser()
        do {
            let name = try Array(#""navigate""#.utf8).withUnsafeBytes { raw in try method.view(raw) }
            return try Array(params.utf8).withUnsafeBytes { raw throws -> RPCError? in
                let view = try parser.view(raw)
                do throws(RPCError) {
                    let p = try Params<NavigateParam>(method: name, params: view, scratch: scratch)
                    let request = try NavigateMethod.request(p, in: state, context)
                    body(request)
                    return nil
                } catch { return error }
            }
        } catch {
            Issue.record("the test's JSON does not parse: \(error)")
            return nil
        }
    }

    @Test func aNavigationIsDecodedFromTheContextAlone() throws {
        let item = try #require(graph.coordinators.firstIndex { $0.name == "app.Item" })
        var seen = false
        let error = decode(#"{"to": "app.Item", "by": "push", "with": {"id": "p1"}, "key": "k-1", "then": {"to": "app.Pay", "by": "present"}}"#, context()) { r in
            #expect(r.coordinator == item && r.toName == nil && r.by == .push)
            #expect(r.withView?.value == ["id": "p1"] && r.key == "k-1")
            // (`then` is kept as given: the navigator reads it against the graph after the key.)
            #expect(r.options?.then == ["to": "app.Pay", "by": "present"])
            seen = true
        }
        #expect(error == nil && seen, "\(String(describing: error))")
    }

    /// A method's params are noted in one scratch table for every request: what one request gave
    /// is absent from the next that does not give it, and a repeated name is its last value.
    @Test func paramsGivenBeforeAreAbsentFromTheNextRequest() {
        var first: (key: String?, by: Presentation?, from: String?) = (nil, nil, nil)
        #expect(decode(#"{"to": "app.Item", "key": "k-1", "by": "push", "from": "n1", "dryRun": true}"#, context()) { r in
            first = (r.key, r.by, r.from)
        } == nil)
        #expect(first.key == "k-1" && first.by == .push && first.from == "n1")
        var next: (key: String?, by: Presentation?, from: String?, dryRun: Bool, with: Bool) = ("", .root, "", true, true)
        #expect(decode(#"{"to": "app.Item", "key": "k-2", "key": "k-3"}"#, context()) { r in
            next = (r.key, r.by, r.from, r.dryRun, r.withView != nil)
        } == nil)
        #expect(next.key == "k-3" && next.by == nil && next.from == nil && !next.dryRun && !next.with)
        var last: (to: Int?, key: String?) = (0, "")
        #expect(decode("{}", context()) { r in last = (r.coordinator, r.key) } == nil)
        #expect(last.to == nil && last.key == nil)
    }

    /// A name the graph does not hold is kept as given: the navigator answers it (`unknownTarget`,
    /// with the names it has), not decoding.
    @Test func aNameTheGraphDoesNotHoldIsLeftToTheNavigator() {
        var toName: String?, coordinator: Int?
        let error = decode(#"{"to": "app.Nowhere"}"#, context()) { r in (toName, coordinator) = (r.toName, r.coordinator) }
        #expect(error == nil && toName == "app.Nowhere" && coordinator == nil)
    }

    /// The usual navigation (`to` found by its bytes, no option) is read without looking at the
    /// params few give; a param of the wrong type is refused naming it whichever way the request
    /// is read: none is skipped. (`then` is kept as given and read by the navigator.)
    @Test func everyParamIsReadOnTheUsualWayAndTheOther() {
        for name in NavigateParam.allCases where name != .session && name != .to {
            let param = NavigateParam.table.names[name.rawValue]
            for to in ["app.Item", "app.Nowhere"] {
                var kept: JSONValue?
                let e = decode(#"{"to": "\#(to)", "\#(param)": [7]}"#, context()) { r in kept = r.options?.then }
                if name == .then {
                    #expect(e == nil && kept == [7], "then, to \(to): \(String(describing: e))")
                } else {
                    #expect(e?.kind == "invalidParams" && e?.data["param"]?.stringValue == param, "\(param), to \(to): \(String(describing: e))")
                }
            }
        }
        // And the usual navigation holds no options at all.
        var options: NavigateOptions? = nil, seen = false
        #expect(decode(#"{"to": "app.Item", "by": "push", "with": {"id": "p1"}, "ifVersion": 0, "dryRun": false, "detach": true, "progress": true}"#,
                       context()) { r in
            options = r.options
            seen = r.by == .push && r.withView != nil && r.ifVersion == 0 && !r.dryRun && r.detach && r.progress
        } == nil)
        #expect(seen && options == nil)
    }

    /// What is wrong with a param is an error naming it, decided from the params and the context.
    @Test func wrongParamsAreRefusedNamingTheParam() {
        let rows: [(params: String, context: DecodingContext, kind: String, param: String)] = [
            (#"{"to": "app.Item", "by": "sideways"}"#, context(), "invalidParams", "by"),
            (#"{"to": "app.Item", "walk": true}"#, context(), "invalidParams", "walk"),
            (#"{"to": 5}"#, context(), "invalidParams", "to"),
            (#"{"to": "app.Item", "key": "a-key-longer-than-eight"}"#, context(maxName: 8), "limitExceeded", "--max-name"),
            (#"{"to": "app.Item", "existing": "top", "by": "present"}"#, context(), "invalidParams", "existing"),
            (#"{"to": "app.Item", "merge": true}"#, context(), "invalidParams", "merge"),
        ]
        for row in rows {
            let e = decode(row.params, row.context)
            #expect(e?.kind == row.kind && (e?.data["param"]?.stringValue ?? e?.data["limit"]?.stringValue) == row.param,
                    "\(row.params): \(String(describing: e))")
        }
        // A number where a node id goes says how ids are written.
        let e = decode(#"{"to": "app.Item", "from": 3}"#, context())
        #expect(e?.message == #""from" must be a string, not integer 3; node ids are strings such as "n3" (as `tree` shows them)"#, "\(String(describing: e))")
        // An integer past 64 bits where one is asked for is said to be too large, not "not integer".
        let large = decode(#"{"to": "app.Item", "ifVersion": 18446744073709551615}"#, context())
        #expect(large?.message == #""ifVersion" must be an integer of at most 9223372036854775807, not 18446744073709551615"#, "\(String(describing: large))")
    }
}
