import CLibUV

/// A libuv error code with its name and message.
public struct UVError: Error, Sendable, CustomStringConvertible, Equatable {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public var name: String { String(cString: uv_err_name(code)) }
    public var message: String { String(cString: uv_strerror(code)) }
    public var description: String { "\(name): \(message)" }

    public static let addressInUse = UVError(Int32(UV_EADDRINUSE.rawValue))
    public static let notFound = UVError(Int32(UV_ENOENT.rawValue))
    public static let endOfFile = UVError(Int32(UV_EOF.rawValue))

    @inline(__always)
    static func check(_ rc: Int32) throws(UVError) {
        if rc < 0 { throw UVError(rc) }
    }
}
