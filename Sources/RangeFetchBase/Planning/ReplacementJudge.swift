/// Whether replacing a slow request with a fresh one pays, judged by what earlier replacements
/// did: each is a trial, and a replacement must beat what it replaced.
///
/// A connection slow on its own (a lossy path, a busy backend behind one connection) is beaten by
/// a fresh one at once. A server that is itself the bottleneck is not: one that is CPU-bound, or
/// begins every stream slowly (tiny HTTP/2 frames and PINGs at each response's head), serves the
/// fresh request as slowly as the one it replaced, and every replacement starts over in the same
/// slow head (once 1,444 requests and 3.8x the file served for 64 MiB at `-n 16`). So:
///
/// - A replacement is a trial: once it has run as long as the replaced request was watched being
///   slow, its average rate (from its start: a fresh connection's set-up and slow head count) must
///   be at least ``beatFactor`` times the replaced request's rate, and healthy (what the scheduler
///   calls slow is no success, whatever it replaced). Otherwise it failed.
/// - While no trial has succeeded, ``firstTrials`` run at a time; each success beyond the
///   failures allows ``trialsPerSuccess`` at once (many trickling connections are replaced
///   together once one replacement has shown that fresh connections are faster).
/// - After ``futileAfterFailures`` failures, and more failures than successes, replacing a slow
///   (but not silent) request is futile for the rest of the download: the slow requests are the
///   server's pace, and they are left to finish. A silent (stalled) request is still replaced:
///   anything beats nothing.
///
/// | trials beaten | trials failed | running | may replace a slow request |
/// |---------------|---------------|---------|----------------------------|
/// | 0             | 0             | 0       | yes (the first trial)      |
/// | 0             | 0             | 1       | yes (a second trial)       |
/// | 0             | 0             | 2       | no (wait for a verdict)    |
/// | 1             | 0             | 3       | yes (up to 4 at once)      |
/// | 0             | 2             | 0       | no (futile)                |
/// | 3             | 2             | 0       | yes                        |
package struct ReplacementJudge: Sendable, Equatable {
    /// A replacement must be this many times as fast as the request it replaced.
    package var beatFactor = 2.0
    /// Failures after which (with more failures than successes) slow requests are not replaced.
    package var futileAfterFailures = 2
    /// Trials allowed at once before any succeeded.
    package var firstTrials = 2
    /// Trials allowed at once per success beyond the failures.
    package var trialsPerSuccess = 4
    /// A trial whose replacement never started (no connection was granted) is forgotten after
    /// this long, seconds.
    package var unclaimedTrialSeconds = 2.0

    package private(set) var beaten = 0
    package private(set) var failed = 0

    private struct Trial: Sendable, Equatable {
        /// Where the replacement's range begins.
        var offset: Int64
        /// The rate the replacement must reach, bytes per second (see ``replacing(offset:victimRate:healthyRate:verdictAfter:now:)``).
        var mark: Double
        /// The replacement's age at its verdict, seconds.
        var verdictAfter: Double
        var proposedAt: Double
        /// The replacement request, once seen.
        var transfer: Int?
        /// Its average rate when last seen.
        var lastRate = 0.0
    }

    private var trials: [Trial] = []

    /// Slow requests are the server's pace: replacing them does not pay.
    package var isFutile: Bool { failed >= futileAfterFailures && failed > beaten }

    /// Trials running now (replacements not judged yet).
    package var running: Int { trials.count }

    /// Whether a slow (not silent) request may be replaced now.
    package var mayReplace: Bool {
        guard !isFutile else { return false }
        let allowed = beaten > failed ? (beaten - failed) * trialsPerSuccess : firstTrials
        return trials.count < allowed
    }

    /// A slow request (at `victimRate` bytes per second) is being replaced by a fresh request for
    /// the range from `offset`, to be judged once it has run `verdictAfter` seconds; a request
    /// under `healthyRate` is slow.
    package mutating func replacing(offset: Int64, victimRate: Double, healthyRate: Double = 0, verdictAfter: Double, now: Double) {
        trials.append(Trial(offset: offset, mark: max(beatFactor * victimRate, healthyRate), verdictAfter: verdictAfter, proposedAt: now))
    }

    /// One request in flight: its range began at `startOffset`.
    package struct Request: Sendable, Equatable {
        package var startOffset: Int64
        package var transfer: SchedulerTransfer

        package init(startOffset: Int64, transfer: SchedulerTransfer) {
            self.startOffset = startOffset
            self.transfer = transfer
        }
    }

    /// Judges the trials by the requests in flight at `now`; `waiting` are where the idle
    /// segments begin (a replacement not started yet: no connection was granted).
    package mutating func observe(now: Double, requests: [Request], waiting: [Int64] = []) {
        guard !trials.isEmpty else { return }
        var kept: [Trial] = []
        for var trial in trials {
            if trial.transfer == nil,
               let match = requests.first(where: { $0.startOffset == trial.offset && $0.transfer.startedAt >= trial.proposedAt }) {
                trial.transfer = match.transfer.id
            }
            guard let id = trial.transfer else {
                if waiting.contains(trial.offset) {
                    if now - trial.proposedAt < unclaimedTrialSeconds { kept.append(trial) }
                } else if now > trial.proposedAt {
                    // Neither running nor waiting: it came and went between two looks (a fast
                    // link finishes a rest in milliseconds).
                    beaten += 1
                } else {
                    kept.append(trial)
                }
                continue
            }
            let mark = trial.mark
            guard let request = requests.first(where: { $0.transfer.id == id })?.transfer else {
                // Gone before its verdict: finished fast (a success), or cut short for another
                // reason (no verdict).
                if trial.lastRate > 0, trial.lastRate >= mark { beaten += 1 }
                continue
            }
            let age = now - request.startedAt
            trial.lastRate = age > 0 ? Double(request.receivedBytes) / age : 0
            if age < trial.verdictAfter {
                kept.append(trial)
            } else if trial.lastRate > 0, trial.lastRate >= mark {
                beaten += 1
            } else {
                failed += 1
            }
        }
        trials = kept
    }
}
