#if canImport(Glibc)
import Glibc
#endif

/// Seconds on the monotonic clock (`CLOCK_MONOTONIC`), for rates, timeouts and backoff.
package enum MonotonicTime {
    /// Seconds on a clock that never goes back (`CLOCK_MONOTONIC`).
    public static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
