import Foundation
import NavGraph
import NavTesting
import NavigationCore
import RPC
import Testing
@testable import NavServer

/// Every limit is declared once, in Protocol/limits.json (generated into ``Limit/all``): the
/// configuration's defaults are the table's, the options take their bounds from it, and no limit
/// is spelled in the sources that the table does not declare.
@Suite struct LimitTableTests {
    @Test func theConfigurationsDefaultsAreTheTables() {
        let c = ServerConfiguration(socketPath: "/nonexistent")
        let n = c.navigator, t = c.transport
        let pairs: [(Limit, Int)] = [
            (.maxMessage, c.maxMessage), (.maxDepth, c.maxDepth), (.maxConnections, c.maxConnections), (.maxOutput, c.maxOutput),
            (.maxTotalOutput, c.maxTotalOutput), (.maxBatch, c.maxBatch), (.maxSessions, c.maxSessions), (.maxTreeDepth, c.session.maxDepth),
            (.maxTreeNodes, c.session.maxNodes), (.maxParamsBytes, c.session.maxParamsBytes), (.maxFacts, c.session.maxFacts),
            (.maxFactValue, c.session.maxFactValue), (.maxFactsBytes, c.session.maxFactsBytes), (.maxPending, c.maxPending),
            (.maxPendingPerSession, c.maxPendingPerSession), (.maxChildren, c.maxChildren), (.maxProviderRequests, c.maxProviderRequests),
            (.maxQueueWait, Int(c.maxQueueWaitMs)), (.maxKeysPerUid, c.maxKeysPerUid), (.maxKeyBytesPerUid, c.maxKeyBytesPerUid),
            (.maxName, c.maxName), (.messageTimeout, Int(c.messageTimeoutMs)), (.logCompactBytes, c.logCompactBytes),
            (.logCompactRatio, c.logCompactRatio), (.maxGraphFile, GraphLimits().maxFileBytes), (.maxGraphNodes, GraphLimits().maxNodes),
            (.maxGraphBytes, GraphLimits().maxTotalBytes), (.maxGraphEdges, GraphLimits().maxEdges),
            // What the layers take from the configuration, and their own defaults.
            (.maxSessions, n.sessions.limit), (.maxPending, n.pending.limit), (.maxName, n.maxName), (.maxMessage, t.maxMessage),
            (.maxSessions, NavigatorLimits().sessions.limit), (.maxMessage, TransportLimits().maxMessage), (.maxConnections, TransportLimits().connections.limit),
            (.maxTreeDepth, SessionLimits().maxDepth),
        ]
        for (limit, value) in pairs { #expect(value == limit.defaultValue, "\(limit.option): \(value), declared \(limit.defaultValue)") }
        let caps: [Limit] = [.maxSessionsPerUid, .maxConnectionsPerUid, .maxPendingPerUid, .maxPendingPerConnection, .maxChildrenPerUid, .maxProviderRequestsPerUid]
        for limit in caps {
            #expect(limit.defaultValue == 0, "\(limit.option) is an opt-in hard cap: 0 (none) by default")
        }
    }

    @Test func eachLimitRefusesWhatIsOutOfItsBounds() {
        for limit in Limit.all {
            #expect(limit.problem(limit.defaultValue) == nil, "\(limit.option)'s default is within its bounds")
            #expect(limit.problem(limit.least) == nil)
            let below = limit.problem(limit.least - 1)
            #expect(below?.hasPrefix(limit.option) == true, "\(limit.option): \(below ?? "accepted")")
            if let most = limit.most {
                #expect(limit.problem(most) == nil)
                #expect(limit.problem(most + 1)?.contains("between \(limit.least) and \(most)") == true)
            }
        }
        #expect(Limit.messageTimeout.problem(99) == "--message-timeout takes a duration of at least 100ms, such as 500ms, 30s or 1m")
        #expect(Limit.maxQueueWait.defaultText == "60s" && Limit.duration(1_500) == "1500ms")
    }

    /// A limit named in a refusal (`data.limit`) or a share is one the table declares, and `navd
    /// serve --help` offers an option for each.
    @Test func everyLimitTheSourcesNameIsDeclaredAndOffered() throws {
        let declared = Set(Limit.all.map(\.option))
        #expect(declared.count == Limit.all.count)
        let pattern = try Regex(#""(--(?:max|message|log-compact)-[a-z-]+)""#)
        var named = Set<String>()
        for module in ["NavServer", "NavigationCore", "NavGraph", "navd"] {
            let dir = Repo.file("Sources/\(module)")
            let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            for file in files where !file.hasPrefix("Generated/") {
                let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
                for m in text.matches(of: pattern) { named.insert(String(m.output[1].substring ?? "")) }
            }
        }
        #expect(named.count >= 20, "the scan finds the limits the sources name: \(named.sorted())")
        #expect(named.subtracting(declared).isEmpty, "named but not declared in Protocol/limits.json: \(named.subtracting(declared).sorted())")
        let help = try runCommand(Repo.binary("navd"), ["serve", "--help"]).stdout + (try runCommand(Repo.binary("navd"), ["check", "--help"]).stdout)
        for option in declared { #expect(help.contains(option + " "), "navd's help offers no \(option)") }
    }
}
