import ArgumentParser
import Foundation
import JSON
import NavClient

func parseJSON(_ text: String, what: String) throws -> JSONValue {
    do { return try JSONParser(maxDepth: 64).parse(text) } catch {
        throw usageError("\(what) is not valid JSON: \(error)")
    }
}

/// `k=v` pairs: v is JSON when it parses (numbers, true, {"a":1}), else a string. With `schema`
/// (a setup model's JSON Schema), each value is read as its field's type says: a string field takes
/// `id=7` as "7" (or a JSON string, `id="7"`), a number, boolean, object or array field JSON.
func pairs(_ items: [String], option: String = "", schema: JSONValue? = nil, owner: String = "") throws -> JSONObject {
    var o = JSONObject()
    for item in items {
        guard let eq = item.firstIndex(of: "="), eq != item.startIndex else {
            throw usageError("\(option.isEmpty ? "" : option + " ")`\(item)` is not KEY=VALUE: write it as id=p1 (a string), n=7 (a number), "
                             + "tags='[\"a\"]' (JSON)\(option == "--with" ? ", or the whole setup as --with-json '{\"id\":\"p1\"}'" : "")")
        }
        let k = String(item[..<eq]), v = String(item[item.index(after: eq)...])
        let parsed = try? JSONParser(maxDepth: 64).parse(v)
        switch fieldTypes(schema, k) {
        case ["string"]:
            if v.hasPrefix("\""), case .string = parsed { o[k] = parsed } else { o[k] = .string(v) }
        case let types where !types.isEmpty && !types.contains("string"):
            guard let parsed, types.contains(jsonType(parsed)) || (types.contains("number") && jsonType(parsed) == "integer") else {
                let t = types.joined(separator: " or ")
                throw usageError("\(option.isEmpty ? "" : option + " ")\(item): field \(k) of \(owner) is \(t == "integer" || t == "object" || t == "array" ? "an" : "a") \(t); "
                                 + "write it as \(k)=\(example(types[0]))")
            }
            o[k] = parsed
        default:
            o[k] = parsed ?? .string(v)
        }
    }
    return o
}

/// The JSON Schema types a setup model gives field `name` (none when it says nothing).
func fieldTypes(_ schema: JSONValue?, _ name: String) -> [String] {
    switch schema?["properties"]?[name]?["type"] {
    case .string(let t): [t]
    case .array(let ts): ts.compactMap(\.stringValue)
    default: []
    }
}

func jsonType(_ v: JSONValue) -> String {
    switch v {
    case .null: "null"
    case .bool: "boolean"
    case .int, .uint: "integer"
    case .double: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
}

func example(_ type: String) -> String {
    switch type {
    case "integer": "7"
    case "number": "1.5"
    case "boolean": "true"
    case "object": "'{\"key\":\"value\"}'"
    case "array": "'[\"a\",\"b\"]'"
    case "null": "null"
    default: "text"
    }
}
