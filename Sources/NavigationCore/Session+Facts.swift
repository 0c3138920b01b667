import JSON

/// Facts: what `check` preconditions read, set by `context.set` and by recovery flows
/// (`recover.facts`), within the session's limits.
extension Session {
    /// What one fact counts for `--max-facts-bytes`: its name and its value, as JSON.
    static func factBytes(_ name: String, _ value: JSONValue) -> Int {
        JSONValue.encodedSize(of: name) + 1 + value.encodedSize
    }

    /// Sets `changes` (a null removes a fact), all or nothing: refused with `limitExceeded` when a
    /// value passes `--max-fact-value` or the session would pass `--max-facts` or `--max-facts-bytes`.
    public func setFacts(_ changes: JSONObject) throws(NavError) {
        // Each value that is not null leaves a fact: more than a session may hold are refused before
        // any name is looked up (50,000 were hashed to be refused).
        var given = 0
        for (_, v) in changes where !v.isNull { given += 1 }
        if given > limits.maxFacts {
            throw NavError(.limitExceeded, "session \"\(name)\" would hold at least \(given) facts; a session may hold at most \(limits.maxFacts) (the --max-facts limit): remove facts by setting them to null",
                           data: ["limit": "--max-facts", "max": .int(limits.maxFacts)])
        }
        var count = facts.count, bytes = factsBytes
        for (k, v) in changes {
            if let old = facts[k] {
                count -= 1
                bytes -= Session.factBytes(k, old)
            }
            if v.isNull { continue }
            let size = v.encodedSize
            if size > limits.maxFactValue {
                throw NavError(.limitExceeded, "the value of fact \"\(k.prefix(64))\" is \(size) bytes of JSON; a fact may hold at most \(limits.maxFactValue) (the --max-fact-value limit)",
                               data: ["limit": "--max-fact-value", "max": .int(limits.maxFactValue)])
            }
            count += 1
            bytes += JSONValue.encodedSize(of: k) + 1 + size
        }
        if count > limits.maxFacts {
            throw NavError(.limitExceeded, "session \"\(name)\" would hold \(count) facts; a session may hold at most \(limits.maxFacts) (the --max-facts limit): remove facts by setting them to null",
                           data: ["limit": "--max-facts", "max": .int(limits.maxFacts)])
        }
        if bytes > limits.maxFactsBytes {
            throw NavError(.limitExceeded, "the facts of session \"\(name)\" would be \(bytes) bytes of JSON together; a session may hold at most \(limits.maxFactsBytes) (the --max-facts-bytes limit): keep large data out of facts, or remove facts by setting them to null",
                           data: ["limit": "--max-facts-bytes", "max": .int(limits.maxFactsBytes)])
        }
        for (k, v) in changes {
            // The names are taken out while changed (so that changing them copies nothing).
            if v.isNull {
                guard facts.removeValue(forKey: k) != nil, var names = sortedNames.take() else { continue }
                // Swift orders a name against a canonically equivalent spelling of another
                // inconsistently ("e\u{301}" and "\u{e9}1": neither is less): where the search does
                // not land on the name, they stay out and are sorted afresh when next asked for.
                let i = names.sortedIndex(of: k)
                if i < names.count && names[i] == k {
                    names.remove(at: i)
                    sortedNames = names
                }
            } else if facts.updateValue(v, forKey: k) == nil, var names = sortedNames.take() {
                names.insert(k, at: names.sortedIndex(of: k))
                sortedNames = names
            }
        }
        factsBytes = bytes
    }

    /// Replaces the facts whole (restored, replayed, a state replaced), with what follows from them.
    func replaceFacts(_ table: [String: JSONValue]) {
        facts = table
        sortedNames = nil
        factsBytes = table.reduce(0) { $0 + Session.factBytes($1.key, $1.value) }
    }

    /// The fact names, sorted (kept in order from the first time they are asked for).
    public var sortedFactNames: [String] {
        if let names = sortedNames { return names }
        let names = facts.keys.sorted()
        sortedNames = names
        return names
    }
}

extension Array where Element == String {
    /// Where `name` is or would go in this sorted array (binary search).
    fileprivate func sortedIndex(of name: String) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let mid = (low + high) / 2
            if self[mid] < name { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
