/// A value made once and never changed, shared between threads although its type does not say it
/// may be: a schema's compiled `Regex<AnyRegexOutput>`, whose program is immutable once compiled
/// but whose output type (and so the regex) is not declared `Sendable`. Holding such a value here
/// keeps the unchecked claim in this module, and lets the type that holds it be checked `Sendable`.
public struct Immutable<Value>: @unchecked Sendable {
    public let value: Value

    @inlinable
    public init(_ value: Value) { self.value = value }
}
