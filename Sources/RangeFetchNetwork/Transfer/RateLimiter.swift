import RangeFetchBase

/// A token bucket shared by every transfer of a download, for `--max-speed`.
///
/// A transfer that finds the bucket empty pauses (`CURL_WRITEFUNC_PAUSE`: libcurl keeps the
/// chunk and delivers it again on unpause); the engine unpauses it once tokens have refilled.
/// A chunk may overdraw the bucket, which the following refills pay back.
package struct RateLimiter {
    /// `nil`: no cap (a live ``SpeedControl`` with none set): every take succeeds.
    package private(set) var bytesPerSecond: Double?
    /// Most tokens the bucket holds: a tenth of a second, at least 64 KiB.
    private var burstBytes: Double
    private var tokens: Double
    private var refilledAt: Double

    package init(bytesPerSecond: Int64?, now: Double) {
        self.bytesPerSecond = bytesPerSecond.map(Double.init)
        burstBytes = Self.burst(self.bytesPerSecond)
        tokens = burstBytes
        refilledAt = now
    }

    private static func burst(_ bytesPerSecond: Double?) -> Double {
        max(64 * 1024, (bytesPerSecond ?? 0) / 10)
    }

    /// A new cap from now on; the tokens held stay within the new burst.
    package mutating func setRate(_ bytesPerSecond: Int64?, now: Double) {
        refill(now: now)
        self.bytesPerSecond = bytesPerSecond.map(Double.init)
        burstBytes = Self.burst(self.bytesPerSecond)
        tokens = min(tokens, burstBytes)
    }

    package mutating func refill(now: Double) {
        if let bytesPerSecond { tokens = min(burstBytes, tokens + (now - refilledAt) * bytesPerSecond) }
        refilledAt = now
    }

    /// Takes `count` tokens if any are left; `false` means wait.
    package mutating func take(_ count: Int) -> Bool {
        guard bytesPerSecond != nil else { return true }
        guard tokens > 0 else { return false }
        tokens -= Double(count)
        return true
    }

    package var hasTokens: Bool { bytesPerSecond == nil || tokens > 0 }
}

/// `--max-speed` (or a live ``SpeedControl``) for one download: the one bucket its transfers take from, reached from libcurl's
/// write callbacks through ``bucket`` (engine thread only).
package final class SpeedLimit {
    package let bucket: UnsafeMutablePointer<RateLimiter>
    /// A cap that may change while the download runs; read once per round.
    private let control: SpeedControl?

    /// The cap now, in bytes per second (`nil`: none).
    package var bytesPerSecond: Int64? { bucket.pointee.bytesPerSecond.map { Int64($0) } }

    /// `--max-speed`'s fixed cap, or a live `control` (which rules when given).
    package init?(bytesPerSecond: Int64?, control: SpeedControl?, now: Double) {
        guard control != nil || bytesPerSecond != nil else { return nil }
        self.control = control
        bucket = .allocate(capacity: 1)
        bucket.initialize(to: RateLimiter(bytesPerSecond: control.map(\.bytesPerSecond) ?? bytesPerSecond, now: now))
    }

    /// Takes a changed cap from the control; `true` when it changed.
    package func follow(now: Double) -> Bool {
        guard let control else { return false }
        let wanted = control.bytesPerSecond
        guard wanted != bytesPerSecond else { return false }
        bucket.pointee.setRate(wanted, now: now)
        return true
    }

    /// The cap `request` asks for (`--max-speed`, a queue's live limit); `nil` without one.
    package convenience init?(_ request: RequestOptions, now: Double) {
        self.init(bytesPerSecond: request.maximumBytesPerSecond, control: request.speedControl, now: now)
    }

    deinit {
        bucket.deinitialize(count: 1)
        bucket.deallocate()
    }

    /// Refills the bucket and resumes the transfers it paused, while it has tokens.
    package func resume(_ transfers: some Sequence<SegmentTransfer>, now: Double) {
        bucket.pointee.refill(now: now)
        for transfer in transfers where transfer.isPaused && bucket.pointee.hasTokens {
            transfer.resumeFromLimiter()
        }
    }
}
