/// When the engine asks for a journal checkpoint: after ``intervalSeconds``, or sooner once
/// ``intervalBytes`` more have been received (so a kill on a fast link loses little), but never
/// more often than every ``minimumSpacingSeconds`` (each checkpoint costs an `fdatasync` and an
/// atomic journal replace).
package struct CheckpointPolicy: Sendable {
    package var intervalSeconds: Double = 1
    package var intervalBytes: Int64 = 512 << 10
    package var minimumSpacingSeconds = 0.05

    /// Longest wait, seconds, for the writes flushed for a checkpoint before it is recorded.
    package var landingWaitSeconds = 0.02

    private var last: (time: Double, bytes: Int64)
    /// A checkpoint was called for at this time and waits for its writes to land.
    private var dueSince: Double?

    package init(now: Double, receivedBytes: Int64, intervalSeconds: Double = 1, intervalBytes: Int64 = 512 << 10) {
        self.intervalSeconds = intervalSeconds
        self.intervalBytes = intervalBytes
        last = (now, receivedBytes)
    }

    /// Whether to checkpoint now; when it says yes it counts the checkpoint as taken.
    package mutating func shouldCheckpoint(now: Double, receivedBytes: Int64) -> Bool {
        let elapsed = now - last.time
        guard elapsed >= intervalSeconds
            || (elapsed >= minimumSpacingSeconds && receivedBytes - last.bytes >= intervalBytes) else { return false }
        last = (now, receivedBytes)
        return true
    }

    /// Whether a checkpoint called for by ``shouldCheckpoint(now:receivedBytes:)`` (whose
    /// flushed buffers are being written) is to be recorded now: once its writes have landed,
    /// or after ``landingWaitSeconds`` regardless. Says yes once per checkpoint.
    package mutating func shouldRecord(now: Double, calledFor: Bool, writesLanded: Bool) -> Bool {
        if calledFor { dueSince = dueSince ?? now }
        guard let due = dueSince, writesLanded || now - due >= landingWaitSeconds else { return false }
        dueSince = nil
        return true
    }
}
