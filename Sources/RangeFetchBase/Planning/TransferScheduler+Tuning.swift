extension TransferScheduler {
    /// Named tuning numbers (seconds and bytes).
    package struct Tuning: Sendable, Equatable {
        /// While `-n auto` searches for its count, decisions come at least this often, seconds,
        /// so a measurement window ends when it is due rather than up to one decision interval
        /// later (20 ms per window cost 1 GiB behind a 12 MiB/s cap 2% over `-n 64`).
        package var searchDecisionSeconds = 0.005
        /// Speeds are sampled over windows at least this long, seconds.
        package var sampleSeconds = 0.02
        /// …and at least this many set-up times (a round trip's worth of bursts).
        package var sampleSetupTimes = 2.0
        /// A request is not judged before this long after its start, seconds…
        package var judgeAfterSeconds = 0.03
        /// …nor before this many set-up times.
        package var judgeAfterSetupTimes = 5.0
        /// Slow: under this fraction of the yardstick.
        package var slowFraction = 0.25
        /// Slow this long (seconds) before a connection is replaced while all are busy…
        package var slowForSeconds = 0.1
        /// …and this many set-up times (on a lossy long link every connection dips now and then,
        /// for a retransmission timeout or so, and a fresh one would start slower).
        package var slowForSetupTimes = 10.0
        /// The yardstick is measured over windows at least this long (seconds)…
        package var yardstickWindowSeconds = 0.01
        /// …and this many set-up times.
        package var yardstickWindowSetupTimes = 4.0
        /// The yardstick forgets a better past with this time constant (seconds), so a link that
        /// got slower for everyone does not make every connection look slow.
        package var yardstickMemorySeconds = 5.0
        /// Rates are also taken over the last one to two of these (seconds): longer than the
        /// period of a server that sends in bursts (nginx's `limit_rate` releases each second's
        /// allowance at once), so a healthy shaped connection is not judged in its quiet part.
        package var speedHorizonSeconds = 1.0
        /// A request silent for this many horizons is judged by its recent rate alone.
        package var silenceHorizons = 1.5
        /// A split must bring the end forward by at least this long (seconds)…
        package var minimumGainSeconds = 0.02
        /// …and by this many set-up times.
        package var minimumGainSetupTimes = 2.0
        /// A healthy request is not cut so that the new part is shorter than this many bytes.
        package var minimumSplitBytes: Int64 = 128 << 10
        /// ``startLagSeconds`` is the least of this many requests' lags.
        package var startLagSamples = 8
        /// Where split points land: on the write alignment, or a metalink's piece boundaries.
        package var cutAlignment = CutAlignment()
        /// Set-up time assumed before one is measured, seconds.
        package var defaultSetupSeconds = 0.05
        /// Whether slow connections are replaced (and a slow request's rest taken over whole). Off
        /// under `--max-speed`: the shared cap pauses whichever connection asks when the budget is
        /// spent, so one that looks slow is only waiting its turn, and a fresh one would wait too.
        package var replacesSlowConnections = true
        /// A connection is given new ranges for this long (whole seconds; libcurl compares
        /// strictly, so 1 replaces connections 2 s old or older)…
        package var connectionLifetimeSeconds = 1
        /// …on links whose set-up time (about a round trip) is at most this (seconds). On longer
        /// links a fresh connection's slow start costs more than it brings: on a clean 400 Mbit/s,
        /// 100 ms link, 256 MiB at `-n 16` took 8.1 s recycling against 6.8 s without.
        package var recycleUpToSetupSeconds = 0.06
        /// Requests smaller than this (small files in a batch, short tails) reuse whatever
        /// connection is open: for them a handshake costs more than slow start could give.
        package var recycleRequestBytes: Int64 = 1 << 20
        /// When recycling applies at all (``DownloadOptions/recycleConnections``).
        package var recycling: ConnectionRecycling = .afterLoss

        package init(minimumSplitBytes: Int64 = 128 << 10, recycleRequestBytes: Int64 = 1 << 20, recycling: ConnectionRecycling = .afterLoss) {
            self.minimumSplitBytes = minimumSplitBytes
            self.recycleRequestBytes = recycleRequestBytes
            self.recycling = recycling
        }
    }
}
