#if canImport(Glibc)
import Glibc
#endif

/// The download's decisions, as a pure value fed segment states, byte counts and an explicit
/// clock: which segment next, where to split, how many connections, who is too slow. The engine
/// carries its actions out on libcurl; tests drive it with simulated links in milliseconds.
///
/// - **Order**: idle segments start lowest offset first.
/// - **Stealing**: a free connection with no idle segment left cuts the busy segment that would
///   finish last where both halves finish together, given each side's speed and a new
///   connection's set-up time. A fast victim keeps about half; a slow one keeps almost nothing;
///   a stalled one is cancelled outright (first request to move wins, never the other way).
/// - **Yardstick**: speeds are judged against the download's own best rate per connection
///   (aggregate bytes per second over a window divided by streaming connections), not against
///   sibling averages: with only slow connections left, they are still slow.
/// - **Bursts**: a server may release a second's allowance at once (nginx's `limit_rate` does,
///   per request, and grants each new request a second's worth up front). Short windows then see
///   a healthy connection idle most of each second and a fresh request far faster than it can
///   last. So once a download has run ``Tuning/speedHorizonSeconds``, the yardstick is also
///   capped by the best rate per connection over that horizon, a request is judged by the better
///   of its recent rate and its rate over the horizon, and only requests that have run the whole
///   horizon set the pace of "fastest now".
/// - **Slow connections** at full capacity: one under ``Tuning/slowFraction`` of the yardstick for
///   ``Tuning/slowForSeconds`` has its rest taken over by a fresh connection, while replacements
///   pay: a ``ReplacementJudge`` holds each to beating what it replaced, and once they do not (the
///   server, not the connection, sets the pace), only silent requests are replaced.
/// - **Waste**: a cut of a busy request spends a ``CutWaste`` budget (its server may have sent
///   the tail already); a request not yet out of a slow head is spared while it may still be in
///   it (``SlowHeads``).
/// - **Recycling**: on short links that lose packets, a connection older than
///   ``Tuning/connectionLifetimeSeconds`` is not given another range; a fresh one is opened for it. On a lossy link a long-lived connection
///   settles at the small window its losses allow, while a new one's slow start carries it well
///   above that for a second or so (WAN 256 MiB, 20 ms, 0.1% loss, `-n 16`: 6.2 s reusing, 5.8 s
///   recycling). See ``connectionLifetimeSeconds(requestBytes:)``.
/// - **Connection count**: ``ConnectionPolicy``.
package struct TransferScheduler: Sendable {
    package var tuning = Tuning()
    package private(set) var connections: ConnectionPolicy
    /// Whether segments may be split (ranged downloads); a single stream cannot be.
    package let splittable: Bool

    /// Seconds a request loses at its start against its own later pace (set-up, slow start, a
    /// server's slow head): the least of the last few healthy requests' (noise only adds to
    /// it), 0 until one has ended. A split must gain more than a fresh request loses.
    package var startLagSeconds: Double { recentStartLags.min() ?? 0 }
    private var recentStartLags: [Double] = []

    /// Per-request speed state, by request id.
    private var rates: [Int: RequestRate] = [:]
    /// Whether replacing slow requests pays on this server.
    package private(set) var replacements = ReplacementJudge()
    /// What cuts may waste, and what they wasted.
    package private(set) var cutWaste = CutWaste()
    /// How long requests are slow at their start on this server.
    package var slowHeads = SlowHeads()
    /// The best aggregate rate per streaming connection seen so far, bytes per second.
    package private(set) var bestRatePerConnection: Double = 0
    /// The same over whole speed horizons; 0 until the download has run one.
    package private(set) var bestHorizonRatePerConnection: Double = 0
    /// Received bytes and streaming connection-seconds, anchored for the horizon rate.
    private var aggregateHorizon: (bytes: HorizonRate, connectionSeconds: HorizonRate)?
    private var streamingConnectionSeconds = 0.0
    private var lastObserved: (time: Double, streaming: Int)?

    /// What a healthy connection achieves, bytes per second: the best aggregate rate per
    /// connection, capped by the best over a whole horizon once there is one (bursts inflate
    /// short windows).
    package var yardstickRate: Double {
        bestHorizonRatePerConnection > 0 ? min(bestRatePerConnection, bestHorizonRatePerConnection) : bestRatePerConnection
    }
    /// Typical time from a request's start to its first byte, seconds (smoothed).
    package private(set) var setupSeconds: Double?
    /// The fastest time from a request to its first byte seen so far, seconds (close to the
    /// round trip, whatever the machine's load): what sizes ``ConnectionPolicy``'s windows.
    private var fastestSetupSeconds: Double?
    private var aggregateSample: (time: Double, bytes: Int64)?

    package init(connections: ConnectionPolicy, splittable: Bool, tuning: Tuning = Tuning()) {
        self.connections = connections
        self.splittable = splittable
        self.tuning = tuning
    }

    /// Connections allowed now.
    package var targetConnections: Int { connections.target }

    /// Seconds until the next decision, given the engine's usual interval: shorter while the
    /// connection count is being searched for.
    package func decisionInterval(usually: Double) -> Double {
        connections.isSettled ? usually : min(usually, tuning.searchDecisionSeconds)
    }

    /// The server pushed back; see ``ConnectionPolicy/pushback()``.
    package mutating func notePushback() { connections.pushback() }

    /// A cut request stopped at its cut with `ahead` already sent past it (see ``CutWaste``).
    package mutating func noteCutStopped(aheadOfCut ahead: CutWaste.Unread) { cutWaste.observe(aheadOfCut: ahead) }

    /// The engine cut `rest` (busy with request `transfer`) at `offset`.
    package mutating func noteCut(_ rest: ByteRange, at offset: Int64, transfer: Int) {
        cutWaste.made(CutWaste.Cut(tail: rest.upper - offset, onTheWire: onTheWire(transfer)))
    }

    /// Sets what cuts may waste from the bytes the download has left (once: a stream, whose
    /// pieces come later, is given its file's size before its first decision).
    package mutating func budgetCuts(remaining: Int64) { cutWaste.start(remaining: remaining) }

    private func cut(_ rest: ByteRange, at offset: Int64, by transfer: SchedulerTransfer) -> CutWaste.Cut {
        CutWaste.Cut(tail: rest.upper - offset, onTheWire: onTheWire(transfer.id))
    }

    /// Bytes request `transfer` has on the wire: its rate over a round trip (the fastest set-up).
    private func onTheWire(_ transfer: Int) -> Int64 {
        Int64((rates[transfer]?.speed ?? 0) * (fastestSetupSeconds ?? setup))
    }

    /// Whether a finished request's connection saw packets arrive out of order.
    package private(set) var pathLosesPackets = false

    /// The path loses packets: recycling may start, and see ``ConnectionPolicy/pathLosesPackets()``.
    package mutating func notePathLoss() {
        pathLosesPackets = true
        connections.pathLosesPackets()
    }

    /// Decides what to start or split now.
    /// - Parameters:
    ///   - segments: every segment not yet complete, busy or idle.
    ///   - receivedBytes: bytes received by the whole download so far (monotonic).
    ///   - startLimit: idle segments starting at or beyond this offset wait (a stream's reorder
    ///     window); free connections then help the busy segments below it instead.
    package mutating func decide(now: Double, segments: [SchedulerSegment], receivedBytes: Int64,
                         startLimit: Int64 = .max) -> [SchedulerAction] {
        let busy = segments.compactMap { segment in segment.transfer.map { (segment, $0) } }
        observe(now: now, busy: busy, receivedBytes: receivedBytes)
        let idle = segments.filter { $0.transfer == nil && !$0.outstanding.isEmpty }
        replacements.observe(now: now, requests: busy.map { segment, transfer in
            ReplacementJudge.Request(startOffset: segment.outstanding.lower - transfer.receivedBytes, transfer: transfer)
        }, waiting: idle.map(\.outstanding.lower))
        if replacements.isFutile || slowHeads.areTheServers { connections.serverSetsThePace() }
        let remaining = segments.reduce(0) { $0 + $1.outstanding.count }
        budgetCuts(remaining: remaining)
        connections.observe(now: now, receivedBytes: receivedBytes, streaming: busy.filter { $0.1.receivedBytes > 0 }.count,
                            setupSeconds: fastestSetupSeconds ?? setup, typicalSetupSeconds: setupSeconds, workLeft: !idle.isEmpty || busy.contains { $0.0.outstanding.count >= 2 * tuning.minimumSplitBytes },
                            remainingBytes: remaining,
                            established: busy.filter { $0.1.receivedBytes >= ConnectionPolicy.establishedBytes }.count)

        var actions: [SchedulerAction] = []
        var free = connections.target - busy.count
        for segment in idle.sorted(by: { $0.outstanding.lower < $1.outstanding.lower })
        where free > 0 && segment.readyAt <= now && segment.outstanding.lower < startLimit {
            actions.append(.start(segment: segment.id))
            free -= 1
        }
        guard splittable else { return actions }
        // Every ready idle segment has a connection; steal for the rest. A segment waiting out a
        // retry backoff keeps its bytes (its retry is scheduled).
        var candidates = busy.map { (segment: $0.0, transfer: $0.1) }
        // Cuts proposed this round count against the budget before the engine makes them.
        var pendingWaste: Int64 = 0
        while free > 0, let (index, offset) = bestSplit(candidates, now: now, pendingWaste: pendingWaste) {
            actions.append(.split(segment: candidates[index].segment.id, at: offset))
            // A takeover cancels the victim's request, so it costs no connection.
            if offset != candidates[index].segment.outstanding.lower {
                free -= 1
                pendingWaste += cutWaste.expected(cut(candidates[index].segment.outstanding, at: offset, by: candidates[index].transfer))
            } else {
                replacing(candidates[index].transfer, from: offset, now: now)
            }
            candidates[index].segment.outstanding = ByteRange(candidates[index].segment.outstanding.lower, offset)
        }
        // At full capacity a slow connection is swapped for a fresh one.
        for (segment, transfer) in candidates where free <= 0 && isPersistentlySlow(transfer, now: now)
            && mayReplace(transfer, rest: segment.outstanding, now: now) {
            if !actions.contains(where: { if case .split(segment.id, _) = $0 { true } else { false } }) {
                actions.append(.split(segment: segment.id, at: segment.outstanding.lower))
                rates[transfer.id]?.slowSince = nil
                replacing(transfer, from: segment.outstanding.lower, now: now)
            }
        }
        return actions
    }

    /// Whether `transfer` (with `rest` still to fetch) may be cancelled for a fresh request:
    /// never while its server's bytes wait unread at our end (``SchedulerTransfer/bytesWaiting``:
    /// the slowness is this machine's, and the server has sent the range already); always when
    /// it is silent, otherwise while replacements pay (``ReplacementJudge``); one proven only
    /// whole (``SchedulerTransfer/provenOnlyWhole``) only while what it would throw away is under
    /// a quarter of its rest: later, a slow one is left to finish.
    private func mayReplace(_ transfer: SchedulerTransfer, rest: ByteRange, now: Double) -> Bool {
        if transfer.bytesWaiting { return false }
        if isSilent(transfer, now: now) { return true }
        guard replacements.mayReplace else { return false }
        return !transfer.provenOnlyWhole || transfer.receivedBytes * 4 < rest.count
    }

    /// No byte for longer than a burst period (``Tuning/silenceHorizons``), since its start or
    /// its last byte. (A window or two without bytes is not silence: a fresh request on a busy
    /// server may wait that long for its first.)
    private func isSilent(_ transfer: SchedulerTransfer, now: Double) -> Bool {
        guard let rate = rates[transfer.id] else { return false }
        let limit = tuning.silenceHorizons * tuning.speedHorizonSeconds
        return rate.sawFirstByte ? rate.silentTooLong : now - transfer.startedAt > limit
    }

    /// Books the replacement of a slow (not silent) request as a trial.
    private mutating func replacing(_ transfer: SchedulerTransfer, from offset: Int64, now: Double) {
        guard !isSilent(transfer, now: now) else { return }
        // The victim's rate: its recent one, or its average since its start when that is more.
        let average = Double(transfer.receivedBytes) / max(now - transfer.startedAt, 0.001)
        replacements.replacing(offset: offset, victimRate: max(rates[transfer.id]?.speed ?? 0, average),
                               healthyRate: tuning.slowFraction * yardstickRate,
                               verdictAfter: max(tuning.slowForSeconds, tuning.slowForSetupTimes * setup), now: now)
    }

    // MARK: Measuring

    private var setup: Double { setupSeconds ?? tuning.defaultSetupSeconds }

    /// Whole seconds after which a connection is replaced before a request of `requestBytes`
    /// (libcurl's `CURLOPT_MAXLIFETIME_CONN`); `nil`: keep it. Only for large enough requests, on
    /// short links, and with ``Tuning/recycling`` `.afterLoss` once the path loses packets.
    package func connectionLifetimeSeconds(requestBytes: Int64) -> Int? {
        let wanted = switch tuning.recycling {
        case .always: true
        case .afterLoss: pathLosesPackets
        case .never: false
        }
        guard wanted, requestBytes >= tuning.recycleRequestBytes, setup <= tuning.recycleUpToSetupSeconds else { return nil }
        return tuning.connectionLifetimeSeconds
    }

    private var yardstickWindow: Double {
        max(tuning.yardstickWindowSeconds, tuning.yardstickWindowSetupTimes * setup)
    }

    private mutating func observe(now: Double, busy: [(SchedulerSegment, SchedulerTransfer)], receivedBytes: Int64) {
        let horizon = tuning.speedHorizonSeconds
        var seen = Set<Int>()
        for (_, transfer) in busy {
            seen.insert(transfer.id)
            var rate = rates[transfer.id] ?? RequestRate(sample: (transfer.startedAt, 0), startedAt: transfer.startedAt,
                                                         horizon: HorizonRate(time: transfer.startedAt))
            if !rate.sawFirstByte, let first = transfer.firstByteAt {
                rate.sawFirstByte = true
                rate.firstByteTime = first
                // Measure from the first byte: set-up time is not slowness.
                rate.sample = (first, 0)
                rate.horizon = HorizonRate(time: first)
                let measured = first - transfer.startedAt
                setupSeconds = setupSeconds.map { 0.75 * $0 + 0.25 * measured } ?? measured
                fastestSetupSeconds = min(fastestSetupSeconds ?? measured, measured)
            }
            let elapsed = now - rate.sample.time
            if elapsed >= max(tuning.sampleSeconds, tuning.sampleSetupTimes * setup) {
                let instant = Double(transfer.receivedBytes - rate.sample.bytes) / elapsed
                rate.bytesPerSecond = rate.bytesPerSecond.map { 0.5 * $0 + 0.5 * instant } ?? instant
                rate.sample = (now, transfer.receivedBytes)
            }
            rate.horizonBytesPerSecond = rate.horizon.observe(now: now, amount: Double(transfer.receivedBytes), horizon: horizon)
            if transfer.receivedBytes > rate.lastSeen.bytes { rate.lastProgress = now }
            // Silent for longer than a burst period (with room for a late burst): stalled,
            // whatever its past.
            rate.silentTooLong = now - max(rate.lastProgress, rate.firstByteTime) > tuning.silenceHorizons * horizon
            rate.lastSeen = (now, transfer.receivedBytes)
            rates[transfer.id] = rate
        }
        // A request that finished before any aggregate window passed (a fast link) still tells
        // what a connection achieves: its average from first byte to last sighting.
        if bestRatePerConnection == 0 {
            for (id, rate) in rates where !seen.contains(id) && rate.sawFirstByte {
                let elapsed = rate.lastSeen.time - rate.firstByteTime
                if elapsed > 0.001 { bestRatePerConnection = max(bestRatePerConnection, Double(rate.lastSeen.bytes) / elapsed) }
            }
        }
        for (id, rate) in rates where !seen.contains(id) { noteStartLag(of: rate) }
        rates = rates.filter { seen.contains($0.key) }

        // The share of a healthy connection: the aggregate over the streaming connections that
        // are not themselves far below the last yardstick (tricklers would dilute it).
        let yardstickBefore = yardstickRate
        let streaming = busy.filter { _, transfer in
            transfer.receivedBytes > 0 && (rates[transfer.id]?.speed ?? .infinity) >= tuning.slowFraction * yardstickBefore
        }.count
        if let last = aggregateSample {
            let elapsed = now - last.time
            if elapsed >= yardstickWindow {
                bestRatePerConnection *= exp(-elapsed / tuning.yardstickMemorySeconds)
                if streaming > 0 {
                    let perConnection = Double(receivedBytes - last.bytes) / elapsed / Double(streaming)
                    bestRatePerConnection = max(bestRatePerConnection, perConnection)
                }
                aggregateSample = (now, receivedBytes)
            }
        } else {
            aggregateSample = (now, receivedBytes)
        }
        // Over a horizon, judged by horizon rates alone (short windows are what bursts distort).
        let streamingOverHorizon = busy.filter { _, transfer in
            transfer.receivedBytes > 0
                && (rates[transfer.id]?.horizonBytesPerSecond ?? .infinity) >= tuning.slowFraction * bestHorizonRatePerConnection
        }.count
        observeHorizon(now: now, receivedBytes: receivedBytes, streaming: streamingOverHorizon)
        // While connections are busy, slow means slow next to the best of them too: a server
        // that bursts each new request (nginx's limit_rate) must not make every connection look
        // slow once the burst is over. Requests that have run a whole horizon set that pace when
        // there are any: a younger one may still be in its first burst.
        let mature = busy.compactMap { rates[$0.1.id] }.filter { $0.sawFirstByte && $0.horizon.span(now: now) >= horizon }
        let fastestNow = mature.compactMap(\.horizonBytesPerSecond).max()
            ?? busy.filter { isJudged($0.1, now: now) }.compactMap { rates[$0.1.id]?.speed }.max()
        let yardstick = min(yardstickRate, fastestNow ?? yardstickRate)
        for (_, transfer) in busy {
            guard var rate = rates[transfer.id] else { continue }
            // Silent for longer than a burst period is slow whatever the yardstick: alone (`-n 1`)
            // a stalled request is its own pace setter, and never slower than itself.
            if isJudged(transfer, now: now), let speed = rate.speed {
                if let first = rate.firstSpeed {
                    if !rate.leftHead && slowHeads.isExit(from: first, to: speed) {
                        rate.leftHead = true
                        slowHeads.recovered(atAge: now - transfer.startedAt, setupSeconds: fastestSetupSeconds ?? setup)
                    }
                } else if speed > 0 {
                    rate.firstSpeed = speed
                }
            }
            if isJudged(transfer, now: now), let speed = rate.speed,
               speed < tuning.slowFraction * yardstick || (rate.sawFirstByte && rate.silentTooLong) {
                rate.slowSince = rate.slowSince ?? now
            } else {
                rate.slowSince = nil
            }
            rates[transfer.id] = rate
        }
    }

    /// Tracks bytes per streaming connection-second over whole horizons, for
    /// ``bestHorizonRatePerConnection``.
    private mutating func observeHorizon(now: Double, receivedBytes: Int64, streaming: Int) {
        if let last = lastObserved { streamingConnectionSeconds += Double(last.streaming) * (now - last.time) }
        let decay = lastObserved.map { exp(-(now - $0.time) / tuning.yardstickMemorySeconds) } ?? 1
        lastObserved = (now, streaming)
        guard var anchors = aggregateHorizon else {
            aggregateHorizon = (HorizonRate(time: now, amount: Double(receivedBytes)), HorizonRate(time: now))
            return
        }
        let horizon = tuning.speedHorizonSeconds
        _ = anchors.bytes.observe(now: now, amount: Double(receivedBytes), horizon: horizon)
        _ = anchors.connectionSeconds.observe(now: now, amount: streamingConnectionSeconds, horizon: horizon)
        aggregateHorizon = anchors
        bestHorizonRatePerConnection *= decay
        let connectionSeconds = anchors.connectionSeconds.change(amount: streamingConnectionSeconds)
        if anchors.bytes.span(now: now) >= horizon, connectionSeconds > 0 {
            let perConnection = anchors.bytes.change(amount: Double(receivedBytes)) / connectionSeconds
            bestHorizonRatePerConnection = max(bestHorizonRatePerConnection, perConnection)
        }
    }

    /// Books what a request that ended (or was cut) had lost at its start: its age when last seen
    /// less its bytes over its last pace. Only a request that ended healthy tells.
    private mutating func noteStartLag(of rate: RequestRate) {
        guard rate.sawFirstByte, rate.slowSince == nil, !rate.silentTooLong, let speed = rate.speed,
              speed > 0, speed >= tuning.slowFraction * yardstickRate, rate.lastSeen.bytes > 0 else { return }
        let age = rate.lastSeen.time - rate.startedAt
        let lost = min(age, max(0, age - Double(rate.lastSeen.bytes) / speed))
        recentStartLags.append(lost)
        if recentStartLags.count > tuning.startLagSamples { recentStartLags.removeFirst() }
    }

    private func isJudged(_ transfer: SchedulerTransfer, now: Double) -> Bool {
        now - transfer.startedAt >= max(tuning.judgeAfterSeconds, tuning.judgeAfterSetupTimes * setup)
    }

    /// The speed to plan a request's rest with: measured once judged, else the yardstick;
    /// `nil` while nothing at all is known.
    private func expectedRate(_ transfer: SchedulerTransfer, now: Double) -> Double? {
        if isJudged(transfer, now: now), !isInSlowHead(transfer, now: now), let measured = rates[transfer.id]?.speed { return measured }
        return yardstickRate > 0 ? yardstickRate : nil
    }

    private func isPersistentlySlow(_ transfer: SchedulerTransfer, now: Double) -> Bool {
        guard tuning.replacesSlowConnections, let since = rates[transfer.id]?.slowSince,
              !isInSlowHead(transfer, now: now) else { return false }
        return now - since >= max(tuning.slowForSeconds, tuning.slowForSetupTimes * setup)
    }

    /// Not out of a slow head yet, not silent, and young enough to be in this server's head.
    private func isInSlowHead(_ transfer: SchedulerTransfer, now: Double) -> Bool {
        guard let rate = rates[transfer.id], !rate.leftHead, !rate.silentTooLong else { return false }
        return slowHeads.spares(age: now - transfer.startedAt)
    }

    // MARK: Splitting

    /// The busy segment whose cut brings the end of the download forward the most, and where to
    /// cut it; `nil` when no cut is worth a new connection.
    private func bestSplit(_ candidates: [(segment: SchedulerSegment, transfer: SchedulerTransfer)], now: Double,
                           pendingWaste: Int64) -> (Int, Int64)? {
        let fresh = yardstickRate
        var best: (index: Int, offset: Int64, finish: Double)?
        for (index, candidate) in candidates.enumerated() {
            let rest = candidate.segment.outstanding
            guard !rest.isEmpty else { continue }
            let speed = expectedRate(candidate.transfer, now: now)
            let finish = speed.map { $0 > 0 ? Double(rest.count) / $0 : .infinity } ?? 0
            guard let offset = splitPoint(rest, victimRate: speed, freshRate: fresh) else { continue }
            // A takeover only while replacements pay; a cut only while the waste budget lasts,
            // and never of a request proven only whole.
            if offset == rest.lower ? !mayReplace(candidate.transfer, rest: rest, now: now)
                : candidate.transfer.provenOnlyWhole
                    || !cutWaste.allows(cut(rest, at: offset, by: candidate.transfer), pending: pendingWaste) { continue }
            if best == nil || finish > best!.finish { best = (index, offset, finish) }
        }
        return best.map { ($0.index, $0.offset) }
    }

    /// Where to cut `rest` so that its current request (at `victimRate`; `nil`: not known yet)
    /// and a new connection (at `freshRate`) finish together (see ``SplitPoint``); `nil` when the
    /// cut gains too little.
    package func splitPoint(_ rest: ByteRange, victimRate: Double?, freshRate: Double) -> Int64? {
        // A fresh connection's cost: its set-up, or the time requests lose at their start (a
        // server's slow head, slow start) when that is longer.
        SplitPoint(tuning: tuning, freshCostSeconds: max(setup, startLagSeconds))
            .offset(rest, victimRate: victimRate, freshRate: freshRate)
    }
}
