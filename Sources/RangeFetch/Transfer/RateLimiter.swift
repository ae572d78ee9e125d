/// A token bucket shared by every transfer of a download, for `--max-speed`.
///
/// A transfer that finds the bucket empty pauses (`CURL_WRITEFUNC_PAUSE`: libcurl keeps the
/// chunk and delivers it again on unpause); the engine unpauses it once tokens have refilled.
/// A chunk may overdraw the bucket, which the following refills pay back.
struct RateLimiter {
    let bytesPerSecond: Double
    /// Most tokens the bucket holds: a tenth of a second, at least 64 KiB.
    let burstBytes: Double
    private var tokens: Double
    private var refilledAt: Double

    init(bytesPerSecond: Int64, now: Double) {
        self.bytesPerSecond = Double(bytesPerSecond)
        burstBytes = max(64 * 1024, Double(bytesPerSecond) / 10)
        tokens = burstBytes
        refilledAt = now
    }

    mutating func refill(now: Double) {
        tokens = min(burstBytes, tokens + (now - refilledAt) * bytesPerSecond)
        refilledAt = now
    }

    /// Takes `count` tokens if any are left; `false` means wait.
    mutating func take(_ count: Int) -> Bool {
        guard tokens > 0 else { return false }
        tokens -= Double(count)
        return true
    }

    var hasTokens: Bool { tokens > 0 }
}

/// `--max-speed` for one download: the one bucket its transfers take from, reached from libcurl's
/// write callbacks through ``bucket`` (engine thread only).
final class SpeedLimit {
    let bucket: UnsafeMutablePointer<RateLimiter>

    init(bytesPerSecond: Int64, now: Double) {
        bucket = .allocate(capacity: 1)
        bucket.initialize(to: RateLimiter(bytesPerSecond: bytesPerSecond, now: now))
    }

    deinit {
        bucket.deinitialize(count: 1)
        bucket.deallocate()
    }

    /// Refills the bucket and resumes the transfers it paused, while it has tokens.
    func resume(_ transfers: some Sequence<SegmentTransfer>, now: Double) {
        bucket.pointee.refill(now: now)
        for transfer in transfers where transfer.isPaused && bucket.pointee.hasTokens {
            transfer.isPaused = false
            transfer.easy.resume()
        }
    }
}
