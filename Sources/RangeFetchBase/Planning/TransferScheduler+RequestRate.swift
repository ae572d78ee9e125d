extension TransferScheduler {
    /// One request's speed record, by the scheduler.
    package struct RequestRate: Sendable {
        package var sample: (time: Double, bytes: Int64)
        /// Bytes per second over the recent windows; `nil` until a window has passed.
        package var bytesPerSecond: Double?
        package var sawFirstByte = false
        package var firstByteTime = 0.0
        package var startedAt = 0.0
        /// When and with how many bytes the request was last seen busy.
        package var lastSeen: (time: Double, bytes: Int64) = (0, 0)
        package var slowSince: Double?
        /// Its speed when first judged; `nil` before (see ``SlowHeads``).
        package var firstSpeed: Double?
        /// It went ``SlowHeads/exitFactor`` times its first speed: out of any slow head.
        package var leftHead = false
        /// The request's rate over the last one to two speed horizons (since its first byte
        /// while it is younger).
        package var horizon: HorizonRate
        package var horizonBytesPerSecond: Double?
        /// When the request last delivered bytes.
        package var lastProgress = 0.0
        /// No byte for ``Tuning/silenceHorizons`` horizons.
        package var silentTooLong = false

        /// The better of the recent and the horizon rate (a quiet spell between a server's
        /// bursts is not slowness), unless the request has been silent for longer than a burst
        /// period; `nil` until a sample window has passed.
        package var speed: Double? {
            bytesPerSecond.map { silentTooLong ? $0 : max($0, horizonBytesPerSecond ?? 0) }
        }
    }
}
