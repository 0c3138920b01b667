/// One limit of `navd serve`, as `Protocol/limits.json` declares it (the table of every limit,
/// ``Limit/all``, is generated from that file by `make protocol`): its option, its default and its
/// bounds. The configuration takes its defaults from here, the options of `navd serve` their
/// defaults and bounds, PROTOCOL.md §5 its table.
public struct Limit: Sendable, Equatable {
    /// What the value counts.
    public enum Unit: String, Sendable {
        /// Things (sessions, nodes, requests).
        case count
        /// Bytes.
        case bytes
        /// Milliseconds; the option takes a duration (`500ms`, `30s`, `1m`).
        case duration
    }

    /// The option of `navd serve`, such as `--max-output`; also what a refusal names as `data.limit`.
    public let option: String
    public let unit: Unit
    /// The default (milliseconds for a duration). For a limit navd sizes to the machine, the value
    /// before sizing.
    public let defaultValue: Int
    /// The least value the option accepts, and the most (nil: no bound above).
    public let least: Int
    public let most: Int?
    /// Why the least value is what it is, when it needs saying.
    public let leastWhy: String?
    /// Whether the option may be left out for navd to size the limit to the machine.
    public let sized: Bool

    public init(option: String, unit: Unit, defaultValue: Int, least: Int, most: Int? = nil, leastWhy: String? = nil, sized: Bool = false) {
        self.option = option
        self.unit = unit
        self.defaultValue = defaultValue
        self.least = least
        self.most = most
        self.leastWhy = leastWhy
        self.sized = sized
    }

    /// The default as the option is written (`30s` for a duration).
    public var defaultText: String { unit == .duration ? Limit.duration(defaultValue) : String(defaultValue) }

    /// The most any limit takes (2^50: a petabyte, 35,000 years in milliseconds): navd adds
    /// limits up and takes shares of them (a reserve is a tenth), which must not overflow an `Int`.
    /// A limit given as `9223372036854775807` to mean "none" stopped navd at its first client.
    public static let ceiling = 1 << 50

    /// What is wrong with `value` for this option, in a sentence; nil when it is within bounds.
    public func problem(_ value: Int) -> String? {
        let unitName = unit == .bytes ? " bytes" : ""
        if let most, value < least || value > most {
            return "\(option) must be between \(least) and \(most)\(unitName)"
        }
        if value > Limit.ceiling {
            let most = unit == .duration ? Limit.duration(Limit.ceiling) : "\(Limit.ceiling)\(unitName)"
            return "\(option) must be at most \(most), the most any limit of navd takes (2^50; a limit that large is as good as none)"
        }
        guard value < least else { return nil }
        if unit == .duration {
            return "\(option) takes a duration of at least \(Limit.duration(least)), such as 500ms, 30s or 1m"
        }
        return "\(option) must be at least \(least)\(unitName)" + (leastWhy.map { " (\($0))" } ?? "")
    }

    /// `ms` milliseconds written as an option takes them: whole seconds as `30s`, else `500ms`.
    public static func duration(_ ms: Int) -> String { ms % 1000 == 0 ? "\(ms / 1000)s" : "\(ms)ms" }
}
