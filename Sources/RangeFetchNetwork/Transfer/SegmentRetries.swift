import RangeFetchBase

/// One download's retries: the ``RetryBudget`` they draw on, when each may start (the
/// ``RetryPolicy``'s backoff with jitter, or the server's `Retry-After`), and the error that ends
/// the download once the budget is spent.
///
/// Engine thread only.
package struct SegmentRetries {
    private var budget: RetryBudget
    private let policy: RetryPolicy
    private var randomState = SystemRandomNumberGenerator()

    package init(policy: RetryPolicy, maximumConnections: Int) {
        self.policy = policy
        budget = RetryBudget(maximumTries: policy.maximumTries, maximumConnections: maximumConnections)
    }

    /// A segment made progress: the download's tries without progress start again.
    package mutating func segmentProgressed() { budget.segmentProgressed() }

    /// Schedules another try of `segment` after `error` (from `now`, monotonic seconds: its
    /// ``EngineSegment/readyAt``) and returns the notice to report.
    /// - Throws: `error`, saying how many tries were spent, once the budget is.
    package mutating func retry(_ segment: EngineSegment, after error: DownloadError, retryAfter: Double?, blame: RetryBudget.Blame,
                        receivedBytes: Int64, now: Double) throws(DownloadError) -> RetryNotice {
        switch budget.charge(blame, segmentTries: &segment.triesWithoutProgress, receivedBytes: receivedBytes) {
        case .giveUp(let tries):
            throw Self.givingUp(error, tries: tries, meagreTries: segment.meagreTries)
        case .retry(let tries):
            let jitter = Double.random(in: 0...1, using: &randomState)
            let delay = policy.delay(beforeRetry: tries, retryAfterSeconds: retryAfter, jitter: jitter)
            segment.readyAt = now + delay
            return RetryNotice(remaining: segment.outstanding, retry: tries, delaySeconds: delay, reason: error.message)
        }
    }

    /// The error that ends a download after `tries` tries, `meagreTries` of them in a row
    /// bringing too few bytes to count as progress: when all did, it says the server ends every
    /// response early.
    package static func givingUp(_ error: DownloadError, tries: Int, meagreTries: Int) -> DownloadError {
        let meagre = meagreTries >= tries
            ? " (each brought under \(ByteCount.format(RetryBudget.meagreTryBytes)): the server ends every response early)" : ""
        return error.with(message: "\(error.message) — gave up after \(tries) tries\(meagre)")
    }
}
