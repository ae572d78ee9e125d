import RangeFetchBase
import RangeFetchNetwork

/// Speed over a sliding window of recent samples (bytes per second).
///
/// Feed it the running total; it ignores the starting value, so a resumed prefix never
/// inflates the speed.
package struct RateEstimator: Sendable {
    /// Samples older than this many seconds fall out of the window.
    public var windowSeconds: Double = 3
    private var samples: [(time: Double, bytes: Int64)] = []

    /// An estimator over the last `windowSeconds`.
    public init(windowSeconds: Double = 3) { self.windowSeconds = windowSeconds }

    /// Records that `bytes` were received in all by `time` (monotonic seconds).
    public mutating func record(bytes: Int64, at time: Double) {
        samples.append((time, bytes))
        while samples.count > 2, let first = samples.first, time - first.time > windowSeconds {
            samples.removeFirst()
        }
    }

    /// Bytes per second across the window; 0 until two samples span some time.
    public var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time)
    }

    /// Seconds to receive `remaining` bytes at the current rate, or `nil` without a rate.
    public func eta(remaining: Int64) -> Double? {
        let rate = bytesPerSecond
        guard rate > 0 else { return remaining == 0 ? 0 : nil }
        return Double(max(remaining, 0)) / rate
    }
}
