/// The one module whose code Swift cannot check for memory safety: references that are not
/// counted, and references handed to C as context pointers. Everything else in navd is built on
/// these few operations; their tests are in Tests/UncheckedTests.
///
/// A reference that is not counted: copying, storing and reading it costs no retain or release.
/// It is valid only while something else keeps the object alive (a tree holds its nodes, a
/// session outlives the reply that names it, a table lives as long as the process); each use says
/// what keeps its object alive.
@frozen
public struct Unretained<Object: AnyObject> {
    @usableFromInline let ref: Unmanaged<Object>

    @inlinable @inline(__always)
    public init(_ object: Object) { ref = .passUnretained(object) }

    /// The object whose address is `opaque` (made by ``opaque``).
    @inlinable @inline(__always)
    public init(opaque: UnsafeRawPointer) { ref = .fromOpaque(opaque) }

    /// The object, as a counted reference again.
    @inlinable @inline(__always)
    public var object: Object { ref.takeUnretainedValue() }

    /// Runs `body` with the object, counting no reference for the call.
    @inlinable @inline(__always)
    public func with<Result>(_ body: (Object) throws -> Result) rethrows -> Result {
        try ref._withUnsafeGuaranteedRef(body)
    }

    /// The object's address.
    @inlinable @inline(__always)
    public var opaque: UnsafeMutableRawPointer { ref.toOpaque() }

    /// Whether both name the same object.
    @inlinable @inline(__always)
    public static func === (a: Unretained, b: Unretained) -> Bool { a.ref.toOpaque() == b.ref.toOpaque() }

    /// Element `i` of `array`, read without counting a reference (the array holds it).
    @inlinable @inline(__always)
    public static func element(_ i: Int, of array: [Object]) -> Unretained {
        array.withUnsafeBufferPointer { b in
            Unretained(opaque: UnsafeRawPointer(b.baseAddress! + i).load(as: UnsafeRawPointer.self))
        }
    }
}

/// An object handed to C as a context pointer (libuv's `data` fields): retained while C holds it,
/// released when taken back.
public enum CContext {
    /// Retains `object` and answers its address, for C to hold.
    @inlinable
    public static func retain(_ object: AnyObject) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(object).toOpaque()
    }

    /// The object at `pointer`, taken back: C's reference is released.
    @inlinable
    public static func take<Object: AnyObject>(_ pointer: UnsafeRawPointer, as: Object.Type) -> Object {
        Unmanaged<Object>.fromOpaque(pointer).takeRetainedValue()
    }

    /// The object at `pointer`, C keeping its reference.
    @inlinable @inline(__always)
    public static func peek<Object: AnyObject>(_ pointer: UnsafeRawPointer, as: Object.Type) -> Object {
        Unmanaged<Object>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Releases C's reference to the object at `pointer` without using it.
    @inlinable
    public static func release<Object: AnyObject>(_ pointer: UnsafeRawPointer, as: Object.Type) {
        Unmanaged<Object>.fromOpaque(pointer).release()
    }
}

extension ContiguousArray where Element: AnyObject {
    /// Runs `body` with each element, counting no reference per element: the array, a value this
    /// call holds, keeps every element alive for the whole loop (whatever `body` does to the
    /// array it came from).
    @inlinable @inline(__always)
    public func forEachUncounted(_ body: (Element) throws -> Void) rethrows {
        try withUnsafeBufferPointer { list in
            for i in list.indices { try Unretained(list[i]).with(body) }
        }
    }
}
