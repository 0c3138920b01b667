import JSON
import NavigationCore

/// The result of a committed `navigate` or `open`: `{navigation, node, version, visible}`, written
/// straight into the reply.
struct Navigated: JSONEncodable {
    let navigation: String
    let node: String
    let version: Int
    let visible: [String]

    func encode(into w: inout JSONWriter) {
        w.raw("{\"navigation\":")
        w.write(string: navigation)
        w.raw(",\"node\":")
        w.write(string: node)
        w.raw(",\"version\":")
        w.write(int: version)
        w.raw(",\"visible\":")
        w.write(strings: visible)
        w.raw("}")
    }

    /// The same as a value, for replies kept for later (navigation keys, pending navigations).
    var json: JSONValue {
        ["navigation": .string(navigation), "node": .string(node), "version": .int(version),
         "visible": .array(visible.map(JSONValue.string))]
    }
}

/// The result of `dismiss` and `flowComplete`: `{version, removed}`.
struct Removed: JSONEncodable {
    let version: Int
    let removed: [String]

    init(version: Int, removed: [String]) {
        self.version = version
        self.removed = removed
    }

    init(_ c: Commit) { self.init(version: c.version, removed: c.removed) }

    func encode(into w: inout JSONWriter) {
        w.raw("{\"version\":")
        w.write(int: version)
        w.raw(",\"removed\":")
        w.write(strings: removed)
        w.raw("}")
    }
}

/// `stackChanged` `{session, version, changes, visible}`, written straight into the broadcast log.
struct StackChanged: JSONEncodable {
    let session: String
    let version: Int
    let changes: [JSONValue]
    let visible: [String]

    func encode(into w: inout JSONWriter) {
        w.raw("{\"session\":")
        w.write(string: session)
        w.raw(",\"version\":")
        w.write(int: version)
        w.raw(",\"changes\":")
        w.write(.array(changes))
        w.raw(",\"visible\":")
        w.write(strings: visible)
        w.raw("}")
    }
}
