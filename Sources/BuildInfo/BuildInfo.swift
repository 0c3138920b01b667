/// What every executable prints for `--version`: the release and the commit it was built from
/// (written by the BuildInfo plugin before each build).
public enum BuildInfo {
    /// The release: also what `hello` answers as the server's version.
    public static let version = "0.1.0"
    /// The commit the sources were built from (`-dirty` when they differed from it; `unknown`
    /// outside a Git checkout).
    public static var commit: String { generatedCommit }
    /// `navctl 0.1.0 (commit 1a2b3c4d5e6f)`, as `git --version` and `rg --version` name themselves.
    public static func versionLine(_ tool: String) -> String { "\(tool) \(version) (commit \(commit))" }
}
