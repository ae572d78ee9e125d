import RangeFetchBase

/// How long ``TransferEngine``'s loop waits between rounds: a pure judgement on the round that
/// just ran.
///
/// | the round                                   | next wait                                        |
/// |---------------------------------------------|--------------------------------------------------|
/// | a request is paused by `--max-speed`        | 5 ms (the bucket refills)                        |
/// | otherwise                                   | until the next decision, retry or 100 ms, ≥ 1 ms |
/// | moved < 64 KiB, nothing ended, requests run | first 2 ms of sleep: the sockets gather more     |
package enum RoundPacing {
    /// Longest poll wait, milliseconds: without socket activity the loop still wakes for
    /// scheduler decisions, retries and `--max-speed` refills.
    package static let idlePollMilliseconds: Double = 100
    /// Poll wait while a request is paused by the rate limiter, milliseconds.
    package static let pausedPollMilliseconds: Int32 = 5
    /// A round of transfers that moved less than this many bytes counts as a trickle…
    package static let coalesceBytes: Int64 = 64 << 10
    /// …and the next round waits this long (a few kilobytes per connection at WAN rates).
    package static let coalesceMicroseconds: UInt32 = 2_000

    /// The poll wait after a round at `now` (monotonic seconds): until `nextDecision` or the
    /// earliest of `readyAt` (waiting segments' retry times) still to come, within
    /// 1…``idlePollMilliseconds``.
    package static func pollMilliseconds(now: Double, paused: Bool, nextDecision: Double, readyAt: some Sequence<Double>) -> Int32 {
        if paused { return pausedPollMilliseconds }
        var wake = min(now + idlePollMilliseconds / 1000, nextDecision)
        for ready in readyAt where ready > now { wake = min(wake, ready) }
        return Int32(max(1, min(idlePollMilliseconds, (wake - now) * 1000)))
    }

    /// Whether the round was a trickle (a lossy WAN delivers a packet or two per wake-up), so
    /// the next one should let the sockets gather more first: otherwise it would cost a system
    /// call per connection for a few kilobytes.
    package static func isTrickle(movedBytes: Int64, anyEnded: Bool, anyRunning: Bool) -> Bool {
        movedBytes < coalesceBytes && !anyEnded && anyRunning
    }
}
