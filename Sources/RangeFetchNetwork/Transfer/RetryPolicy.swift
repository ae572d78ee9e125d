import RangeFetchBase

/// When and how often a failed segment request is tried again.
///
/// A retry continues from the segment's last written byte; it does not restart the segment.
/// The delay before retry `n` (1-based) is `min(baseDelay * 2^(n-1), maximumDelay)`, scaled by a
/// random jitter in `[0.5, 1.0]` so parallel connections do not retry in lockstep. A server's
/// `Retry-After` replaces the computed delay (capped at ``maximumRetryAfterSeconds``).
///
/// With the defaults (`baseDelaySeconds` 0.5, `maximumDelaySeconds` 16):
///
/// | retry | delay before jitter | range after jitter |
/// |-------|---------------------|--------------------|
/// | 1     | 0.5 s               | 0.25 – 0.5 s       |
/// | 2     | 1 s                 | 0.5 – 1 s          |
/// | 3     | 2 s                 | 1 – 2 s            |
/// | 4     | 4 s                 | 2 – 4 s            |
/// | 5     | 8 s                 | 4 – 8 s            |
/// | 6+    | 16 s                | 8 – 16 s           |
public struct RetryPolicy: Sendable, Equatable {
    /// Tries per segment without progress (the first request counts); 1 means no retry.
    public var maximumTries: Int = 5
    /// Seconds before the first retry; doubled for each one after.
    public var baseDelaySeconds: Double = 0.5
    /// The longest wait between retries, seconds.
    public var maximumDelaySeconds: Double = 16
    /// A server's `Retry-After` is honoured up to this many seconds.
    public var maximumRetryAfterSeconds: Double = 120

    /// A policy of `maximumTries` tries per range, waiting `baseDelaySeconds` first.
    public init(maximumTries: Int = 5, baseDelaySeconds: Double = 0.5) {
        self.maximumTries = maximumTries
        self.baseDelaySeconds = baseDelaySeconds
    }

    /// Seconds to wait before a retry.
    /// - Parameters:
    ///   - retry: the retry's number, from 1.
    ///   - retryAfterSeconds: the server's `Retry-After`, which wins (up to ``maximumRetryAfterSeconds``).
    ///   - jitter: a factor in `[0, 1]`, mapped onto `[0.5, 1.0]`.
    public func delay(beforeRetry retry: Int, retryAfterSeconds: Double?, jitter: Double) -> Double {
        if let retryAfterSeconds { return min(max(retryAfterSeconds, 0), maximumRetryAfterSeconds) }
        var delay = baseDelaySeconds
        for _ in 1..<max(retry, 1) where delay < maximumDelaySeconds { delay *= 2 }
        return min(delay, maximumDelaySeconds) * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }

    /// The longest a server that accepts the connection and never answers can hold a download
    /// up, in seconds: each try waits `stallSeconds` for a byte, and the waits between tries
    /// are at their longest (no jitter). With the defaults (5 tries, 30 s) about 158 s.
    public func longestSilentServerSeconds(stallSeconds: Int) -> Double {
        let tries = max(1, maximumTries)
        let waits = (1..<tries).reduce(0.0) { $0 + delay(beforeRetry: $1, retryAfterSeconds: nil, jitter: 1) }
        return Double(tries * stallSeconds) + waits
    }

    /// Parses a `Retry-After` value in seconds (the HTTP-date form is treated as absent).
    package static func retryAfterSeconds(_ header: String?) -> Double? {
        guard let header, let seconds = Int(header.trimmingASCIIWhitespace()), seconds >= 0 else { return nil }
        return Double(seconds)
    }
}
