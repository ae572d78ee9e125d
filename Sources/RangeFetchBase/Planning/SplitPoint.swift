/// Where to cut a busy request's rest `R` so that the request (at `v` bytes/s) and a new
/// connection (at `f`, after `t0`, its set-up or the time requests lose at their start) finish
/// together: the victim keeps `x` bytes with `x / v = t0 + (R - x) / f`, so
/// `x = v (t0 f + R) / (v + f)`. A pure rule, tested as a table.
///
/// | victim                              | cut                                               |
/// |-------------------------------------|---------------------------------------------------|
/// | under a speed cap (no replacements) | in half                                           |
/// | judged and stalled (`v <= 0`)       | at its position: the new connection takes all     |
/// | under ``TransferScheduler/Tuning/slowFraction`` of `f` | at its position, if the cut gains enough |
/// | measured                            | at `x`, if it brings the end forward enough       |
/// | not measured yet                    | in half                                           |
///
/// Cuts are moved onto a boundary by ``TransferScheduler/Tuning/cutAlignment``; none leaves the new
/// part under ``TransferScheduler/Tuning/minimumSplitBytes``.
package struct SplitPoint: Sendable {
    package var tuning: TransferScheduler.Tuning
    /// A fresh connection's cost before its first byte, seconds (`t0`).
    package var freshCostSeconds: Double

    /// Where to cut `rest`, or `nil` when the cut gains too little; `victimRate` is `nil` while
    /// the request is not measured yet.
    package func offset(_ rest: ByteRange, victimRate: Double?, freshRate f: Double) -> Int64? {
        let total = Double(rest.count)
        let t0 = freshCostSeconds
        var offset: Int64
        if !tuning.replacesSlowConnections {
            // Under a speed cap measured rates say little (see the tuning): halve, never cancel.
            offset = rest.lower + rest.count / 2
        } else if let v = victimRate, v <= 0 {
            // Judged and stalled: the fresh connection takes everything.
            return rest.lower
        } else if let v = victimRate, f > 0 {
            let keep = min(total, v * (t0 * f + total) / (v + f))
            let gain = (total - keep) / v
            guard gain >= max(tuning.minimumGainSeconds, tuning.minimumGainSetupTimes * t0) else { return nil }
            // A slow request is cancelled outright: the fresh connection takes the whole rest.
            if v < tuning.slowFraction * f { return rest.lower }
            offset = rest.lower + Int64(keep)
        } else {
            // Nothing measured yet: halve.
            offset = rest.lower + rest.count / 2
        }
        if offset > rest.lower { offset = tuning.cutAlignment.cut(offset, lower: rest.lower, upper: rest.upper) }
        guard offset < rest.upper else { return nil }
        // A healthy request is not cut into crumbs.
        if rest.upper - offset < tuning.minimumSplitBytes { return nil }
        return offset
    }

    package init(tuning: TransferScheduler.Tuning, freshCostSeconds: Double) {
        self.tuning = tuning
        self.freshCostSeconds = freshCostSeconds
    }
}
