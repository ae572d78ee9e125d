extension TransferScheduler {
    /// Bytes per second over the last one to two horizons: two anchors, the newer moved up once
    /// it is a horizon old, so no history is kept.
    package struct HorizonRate: Sendable {
        private var older: (time: Double, amount: Double)
        private var newer: (time: Double, amount: Double)

        package init(time: Double, amount: Double = 0) {
            older = (time, amount)
            newer = older
        }

        /// Seconds the rate covers at `now`.
        package func span(now: Double) -> Double { now - older.time }

        /// Records `amount` (bytes, or connection-seconds) at `now` and returns the rate since
        /// the older anchor; `nil` while no time has passed.
        package mutating func observe(now: Double, amount: Double, horizon: Double) -> Double? {
            if now - newer.time >= horizon {
                older = newer
                newer = (now, amount)
            }
            let elapsed = now - older.time
            return elapsed > 0 ? (amount - older.amount) / elapsed : nil
        }

        /// The change in `amount` since the older anchor.
        package func change(amount: Double) -> Double { amount - older.amount }
    }
}
