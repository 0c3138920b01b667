/// A method navd answers, one per file (`Methods/<Name>.swift`, the type `<Name>Method`), declared in
/// `Protocol/methods/<name>.json`: `make protocol` generates from that file the method's
/// ``MethodTable/Spec`` and param enum (`Generated/MethodDeclarations.swift`) and the call that
/// registers it (``MethodTable/registerAll(_:)``), so that adding a method is those two files.
protocol NavdMethod {
    /// Registers the method's handler under its generated spec.
    static func register(in methods: MethodTable, _ server: Server)
}
