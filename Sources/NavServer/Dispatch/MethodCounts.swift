import JSON

/// One method's answers, errors and answer latencies since navd started (`stats.methods`, and
/// nav-web's `/metrics` as Prometheus histograms). Kept in the method's table entry; no allocation.
///
/// A latency runs from the read that brought the request (bytes in navd's hands) to its answer
/// written into the connection's output; a navigation waiting on preconditions counts its wait.
/// Answers given while their read is handled all share that read's latency, taken once when the
/// read ends (a pipelining client's answers leave together then): an increment per answer and one
/// clock reading per read.
struct MethodCounts {
    /// Of its answers, errors.
    var errors = 0
    /// Answers given in the read being handled, not yet put in a bucket (see ``Dispatcher/settleAnswers()``).
    var unsettled = 0
    /// Answers in each latency bucket (not cumulative): bucket i holds latencies ≤ `bounds[i]` and
    /// greater than the bound before; the last, those past every bound.
    var buckets = InlineArray<22, Int>(repeating: 0)
    /// Every answer's latency added up, in nanoseconds.
    var totalNs: UInt64 = 0

    /// The buckets' upper bounds in nanoseconds, Prometheus's default ladder (10 µs … 60 s); a
    /// bucket past the last holds the rest (`+Inf`).
    static let boundsNs: [UInt64] = [
        10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
        1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000,
        100_000_000, 250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000, 5_000_000_000,
        10_000_000_000, 30_000_000_000, 60_000_000_000,
    ]

    /// For each power of two 2^p, the first bucket whose bound is at least 2^p: a latency's bucket
    /// is found from its highest bit and at most two comparisons (no two bounds share an octave but
    /// for one, so the walk is short whatever the latency).
    static let firstBucketByBit: [UInt8] = (0..<64).map { p in
        UInt8(boundsNs.firstIndex { $0 >= (1 as UInt64) << p } ?? boundsNs.count)
    }

    /// The bucket of a latency of `ns` nanoseconds.
    @inline(__always)
    static func bucket(_ ns: UInt64) -> Int {
        var i = Int(firstBucketByBit[63 &- (ns | 1).leadingZeroBitCount])
        let bounds = boundsNs
        while i < bounds.count && ns > bounds[i] { i += 1 }
        return i
    }

    /// Counts `n` answers given `ns` after their request was read.
    @inline(__always)
    mutating func answered(_ n: Int = 1, after ns: UInt64) {
        buckets[MethodCounts.bucket(ns)] += n
        totalNs &+= ns &* UInt64(n)
    }

    /// Answers counted (each request is answered once; a request still waiting is not yet counted).
    var answers: Int {
        var n = 0
        for i in buckets.indices { n += buckets[i] }
        return n
    }

    /// As `stats` shows it: requests, errors, and the latency histogram with cumulative counts
    /// by upper bound in seconds (`le`, as Prometheus names it; the last `"+Inf"`).
    var object: JSONObject {
        var cumulative = 0
        var ladder: [JSONValue] = []
        for i in buckets.indices {
            cumulative += buckets[i]
            let le: JSONValue = i < MethodCounts.boundsNs.count ? .double(Double(MethodCounts.boundsNs[i]) / 1e9) : "+Inf"
            ladder.append(["le": le, "count": .int(cumulative)])
        }
        return [
            "requests": .int(cumulative), "errors": .int(errors),
            "latency": ["count": .int(cumulative), "sumSeconds": .double(Double(totalNs) / 1e9), "buckets": .array(ladder)],
        ]
    }
}
