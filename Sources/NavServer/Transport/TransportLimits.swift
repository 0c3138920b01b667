import RPC

/// The limits the transport keeps to (``ServerConfiguration`` makes them): the part of navd's
/// options about connections, messages and output. The transport knows no other configuration.
struct TransportLimits: Sendable {
    /// `--max-connections`, shared between uids (with `--max-connections-per-uid`, off by default).
    var connections = FairShare(limit: Limit.maxConnections.defaultValue, option: "--max-connections", capOption: "--max-connections-per-uid")
    /// The largest message a client may send (`--max-message`).
    var maxMessage = Limit.maxMessage.defaultValue
    /// Unread output past which a client is disconnected (`--max-output`).
    var maxOutput = Limit.maxOutput.defaultValue
    /// Unread output past which a client's requests stop being read (back-pressure).
    var readPauseThreshold = 1 << 20
    /// How long one client's pipelined requests are handled in one loop iteration before the rest
    /// wait for the next, after the other clients' reads (nanoseconds; looked at every few messages).
    var inputSlice: UInt64 = 2_000_000
    /// Unread output of all clients together past which those holding the most are disconnected.
    var maxTotalOutput = Limit.maxTotalOutput.defaultValue
    /// Unfinished messages of all clients together past which the uid holding the most loses its
    /// connections holding the most (`--max-total-input`).
    var maxTotalInput = Limit.maxTotalInput.defaultValue
    /// How long part of a message may wait for its rest (`--message-timeout`).
    var messageTimeoutMs = UInt64(Limit.messageTimeout.defaultValue)

    /// Output past which navd stops reading a client's requests.
    var pauseMark: Int { min(readPauseThreshold, maxOutput / 2) }
}

/// The transport's counters, for `stats`.
struct TransportStats {
    var connectionsAccepted = 0
    var connectionsRefused = 0
    var bytesIn = 0
    var bytesOut = 0
    var slowClientsDropped = 0
    /// Connections cut because all clients together held more than `--max-total-input`.
    var inputHoldersDropped = 0
    var notificationsSent = 0
}
