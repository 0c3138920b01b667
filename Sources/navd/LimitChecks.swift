import ArgumentParser
import NavGraph
import RPC

/// Refuses `value`, given for `limit`'s option, when it is out of the limit's bounds.
func check(_ limit: Limit, _ value: Int) throws {
    if let problem = limit.problem(value) { throw ValidationError(problem) }
}

/// The milliseconds duration option `text` gives (`500ms`, `30s`, `1m`); -1, below every limit's
/// bounds, when it is no duration.
func milliseconds(_ text: String) -> Int {
    parseDuration(.string(text)).map { Int(clamping: $0) } ?? -1
}
