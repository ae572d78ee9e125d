/// How many connections a download may have at once: a fixed number (`-n 8`), or found while it
/// runs (`-n auto`).
///
/// Adaptive: start with ``AdaptiveGrowth/initialConnections``; once every connection has
/// delivered its first byte, measure the aggregate rate over a window; double the count while the
/// last doubling bought at least ``AdaptiveGrowth/usefulGainFraction`` of the linear gain (a
/// per-connection cap shows as linear growth), and quadruple after a doubling that was all but
/// linear (``AdaptiveGrowth/linearGainFraction``); when a step bought too little, go back to the
/// previous count (if it bought nothing), cut a leap back to the count its rate needs, or keep
/// it, and settle. A server that pushes back (429,
/// 503, refused or reset connections) settles it below the count that provoked it, fixed or not. A path seen
/// losing packets doubles a settled count once (``pathLosesPackets()``). Never above ``maximum``.
///
/// A pure value: fed the clock and byte counts, it answers with the count. No sockets.
package struct ConnectionPolicy: Sendable {
    /// Tuning of the adaptive search.
    package struct AdaptiveGrowth: Sendable, Equatable {
        /// 16 (aria2c's most, and the old fixed default): behind a per-connection cap every
        /// step of the search runs below the link, and starting at 4 cost three windows to
        /// reach 64 (1 GiB at 12 MiB/s per connection: 1.67 s against 1.49 s at `-n 64`, +12%);
        /// from 16 a linear doubling leaps to 64 at once. An uncapped path gives the extra
        /// connections back after one window.
        package var initialConnections = 16
        /// Shortest measurement window per step, seconds. Behind a per-connection cap each window
        /// runs below the link: 0.06 s cost 1 GiB at 12 MiB/s per connection 6% over `-n 64`,
        /// 0.03 s costs 3% (a cap's rate is steady, so a short window measures it well).
        package var minimumWindowSeconds = 0.03
        /// The window is at least this many connection set-up times (the fastest time to first
        /// byte seen, close to the round trip), so a long round trip gets a proportionally longer
        /// look. The fastest, not the typical: on a busy machine the typical one measures the
        /// event loop's backlog (60 ms on an unthrottled loopback), not the path.
        package var windowInSetupTimes = 10.0
        /// A typical set-up time more than this many times the fastest means requests wait on
        /// this machine (its event loop, its CPU: 60 ms against 3 ms on an unthrottled
        /// loopback), not on the path; more connections cannot help there, so the window follows
        /// the typical time. Behind a cap the two stay within 2-3x.
        package var busyMachineSetupRatio = 4.0
        /// …and long enough for every streaming connection to deliver this many bytes on average,
        /// so a server that sends in bursts is measured over several of them.
        package var windowBytesPerConnection: Int64 = 256 << 10
        /// A doubling must raise the aggregate rate by at least this fraction of the ideal
        /// (linear) gain to be worth another doubling.
        package var usefulGainFraction = 0.5
        /// Below this gain (rate after / rate before) the added connections bought nothing and
        /// are given back.
        package var uselessGain = 1.08
        /// A step that bought at least this fraction of the linear gain shows a clear
        /// per-connection cap: the next step quadruples (a leap), so a cap that needs 32 or 64
        /// connections is reached in fewer measurement windows. A leap that buys less than a doubling
        /// should (``usefulGainFraction`` of 2) is cut back to the count its rate needs (the
        /// connections before it times its gain, rounded up).
        package var linearGainFraction = 0.9
        /// A growing step's window whose second half (by bytes) ran faster than this many times its first is
        /// measured again from its end: its connections were still ramping up (a server that begins
        /// every response slowly, slow start), and a rate taken across a ramp credits the next
        /// step with what the last one had not shown yet (an h2 server with a slow head at each
        /// stream's start was taken for a per-connection cap, and auto leapt to 64 connections).
        package var rampingFactor = 1.5
        /// …at most this many times per step.
        package var rampRestarts = 2
        /// A growing step's window whose first half (by time) carried more than this many times
        /// its second says nothing about the count: the server sends in bursts further apart
        /// than the window (nginx's `limit_rate` sends each request's first second at once with
        /// its head, then a second's worth at each tick of its clock), so the window measured the
        /// new requests' first bursts. Such a step is not judged: the count doubles, and the
        /// next window that is not all burst is compared with the last one that was not (a
        /// judged step gives back what did not pay). A per-connection cap this coarse is what
        /// such servers have, so more connections pay: behind `limit_rate 1m`, 256 MiB took 4.0 s
        /// against 3.0 s at `-n 64` when bursts were judged (and settled at 32 for a second).
        package var burstFactor = 4.0
        /// A growing step whose window, once as long as it must be, has received less than the
        /// path's peak rate before it over this factor, with its connections streaming, is paced by the
        /// server connection by connection: the path has carried far more (each request's first
        /// burst came at once), and every connection now waits for the server's next tick. Such a
        /// window would last until that tick (a second behind nginx's `limit_rate`), so the
        /// count quadruples at once, unjudged: behind `limit_rate 1m` with 256 MiB in 64 pieces,
        /// each second at 16 or 32 connections left pieces waiting for a request that ended 3 s
        /// later (auto 4.1-10.1 s, `-n 64` 3.1 s).
        package var pacingFactor = 16.0
        /// The shortest interval the peak rate is taken over, seconds.
        package var peakIntervalSeconds = 0.004
        /// Once settled, the aggregate is watched over windows at least this long (seconds)…
        package var watchWindowSeconds = 0.5
        /// …and when it sinks under this fraction of its best, doubling is tried again…
        package var declineFraction = 0.75
        /// …or under this one once the path is seen losing packets (a sag there means the
        /// connections have settled at what their losses allow, which more connections add to)…
        package var lossyDeclineFraction = 0.9
        /// …at most this many times per download, and only while what is left would take at
        /// least this many seconds at the sunken rate: a download's last fifth sinks as its
        /// ranges end, and on an uncapped loopback a step taken there (16 to 32 at 823 of
        /// 1,024 MiB, 2 runs in 3) bought nothing.
        package var reprobes = 3
        package var reprobeWorthSeconds = 1.0
    }

    package enum Mode: Sendable, Equatable {
        case fixed
        case adaptive(AdaptiveGrowth)
    }

    package let mode: Mode
    /// Upper bound on ``target``.
    package let maximum: Int
    /// Connections allowed now.
    package private(set) var target: Int

    private enum Phase: Equatable {
        /// Doubling while it pays.
        case growing
        /// Found a count; watching the aggregate rate (the best seen, bytes per second).
        case watching(best: Double)
        /// Fixed, at the maximum, out of work, or pushed back: no more changes upwards.
        case done
    }

    private var phase: Phase
    /// Times a sinking rate may send the search upwards again.
    private var reprobesLeft: Int

    /// Not growing now: the count was found (or fixed); it may still grow again if the
    /// aggregate rate sinks later (see ``AdaptiveGrowth/declineFraction``).
    package var isSettled: Bool { phase != .growing }

    /// The measurement under way for the current count.
    private var window: (start: Double, bytes: Int64)?
    /// The window's state at half its length (for ``AdaptiveGrowth/rampingFactor``).
    private var windowMiddle: (time: Double, bytes: Int64)?
    /// Windows measured again at the current step.
    private var rampRestarts = 0
    /// The aggregate rate and count of the previous step, bytes per second.
    private var previous: (rate: Double, count: Int)?
    /// The fastest the download has received between two observations (``AdaptiveGrowth/peakIntervalSeconds``
    /// apart at least), bytes per second, and when; and the observation the next is measured from.
    private var peak = (rate: 0.0, time: 0.0)
    private var lastObservation: (time: Double, bytes: Int64)?
    /// See ``pathLosesPackets()``.
    private var lossSeen = false

    /// A fixed number of connections.
    package static func fixed(_ connections: Int) -> ConnectionPolicy {
        ConnectionPolicy(mode: .fixed, maximum: connections, target: connections, phase: .done, reprobes: 0)
    }

    /// Adaptive, from `growth.initialConnections` up to `maximum`.
    package static func adaptive(maximum: Int, growth: AdaptiveGrowth = AdaptiveGrowth()) -> ConnectionPolicy {
        let start = min(maximum, growth.initialConnections)
        return ConnectionPolicy(mode: .adaptive(growth), maximum: maximum, target: start,
                                phase: start >= maximum ? .done : .growing, reprobes: growth.reprobes)
    }

    private init(mode: Mode, maximum: Int, target: Int, phase: Phase, reprobes: Int) {
        self.mode = mode
        self.maximum = maximum
        self.target = target
        self.phase = phase
        reprobesLeft = reprobes
    }

    package var isAdaptive: Bool { if case .adaptive = mode { true } else { false } }

    /// Feeds one observation; may change ``target``.
    /// - Parameters:
    ///   - receivedBytes: bytes received by the whole download so far (monotonic).
    ///   - streaming: active transfers that have delivered at least one byte.
    ///   - setupSeconds: the fastest time from a request to its first byte seen so far.
    ///   - typicalSetupSeconds: the typical (smoothed) one, when known.
    ///   - workLeft: whether enough work remains to feed more connections.
    ///   - remainingBytes: the bytes still to come, when known.
    ///   - established: of the streaming transfers, those that have received at least
    ///     ``establishedBytes`` (all of them when not given).
    package mutating func observe(now: Double, receivedBytes: Int64, streaming: Int, setupSeconds: Double,
                          typicalSetupSeconds: Double? = nil, workLeft: Bool, remainingBytes: Int64? = nil,
                          established: Int? = nil) {
        guard case .adaptive(let growth) = mode, phase != .done else { return }
        if let last = lastObservation {
            if now - last.time >= growth.peakIntervalSeconds {
                let rate = Double(receivedBytes - last.bytes) / (now - last.time)
                if rate > peak.rate { peak = (rate, now) }
                lastObservation = (now, receivedBytes)
            }
        } else {
            lastObservation = (now, receivedBytes)
        }
        guard workLeft else {
            phase = .done
            return
        }
        // Start measuring once the current count is up and streaming: connections still opening
        // would make the step look worse than it is. (A connection replaced mid-window does not
        // restart it: that is part of the link's life.) Up: all but an eighth, since with 32 or
        // 64 connections one is nearly always between two ranges.
        guard let started = window else {
            if streaming * 8 >= target * 7 { window = (now, receivedBytes) }
            return
        }
        let basis = Self.windowBasis(fastest: setupSeconds, typical: typicalSetupSeconds, growth: growth)
        var length = max(growth.minimumWindowSeconds, growth.windowInSetupTimes * basis)
        if case .watching = phase { length = max(length, growth.watchWindowSeconds) }
        let wanted = Int64(streaming) * growth.windowBytesPerConnection
        // Pacing, and bursts, show only once the connections are past their first bytes: a
        // server that begins each response slowly (an HTTP/2 stream's slow head on a CPU-bound
        // server) also goes quiet after a fast stretch, and more connections only slow it down.
        let pastTheirStart = (established ?? streaming) * 8 >= target * 7
        if phase == .growing, now - started.start >= length, streaming * 8 >= target * 7, pastTheirStart,
           peak.time <= started.start,
           Double(receivedBytes - started.bytes) * growth.pacingFactor < peak.rate * (now - started.start) {
            growUnjudged(rate: Double(receivedBytes - started.bytes) / (now - started.start), by: 4)
            window = nil
            windowMiddle = nil
            return
        }
        if windowMiddle == nil, now - started.start >= length / 2, receivedBytes - started.bytes >= wanted / 2 {
            windowMiddle = (now, receivedBytes)
        }
        guard now - started.start >= length, receivedBytes - started.bytes >= wanted else { return }
        let rate = Double(receivedBytes - started.bytes) / (now - started.start)
        let middle = windowMiddle
        window = nil
        windowMiddle = nil
        if phase == .growing, let middle, middle.time > started.start, now > middle.time {
            let first = Double(middle.bytes - started.bytes) / (middle.time - started.start)
            let second = Double(receivedBytes - middle.bytes) / (now - middle.time)
            if second > growth.rampingFactor * first, rampRestarts < growth.rampRestarts {
                rampRestarts += 1
                window = (now, receivedBytes)
                return
            }
            if first > growth.burstFactor * second, pastTheirStart {
                growUnjudged(rate: rate)
                return
            }
        }
        switch phase {
        case .growing:
            var factor = 2
            if let previous {
                let gain = previous.rate > 0 ? rate / previous.rate : 2
                let ideal = Double(target) / Double(previous.count)
                if gain < growth.uselessGain && !lossSeen {
                    target = previous.count
                    phase = .watching(best: previous.rate)
                    return
                }
                if gain - 1 < growth.usefulGainFraction * (ideal - 1) {
                    if ideal > 2, gain - 1 < growth.usefulGainFraction {
                        // A leap that bought less than a doubling should: keep what the measured
                        // gain needs. (One that bought that much keeps its count: on a busy
                        // machine the step is measured low, and a count cut too far costs more
                        // than connections that are not all needed.)
                        let needed = Int((Double(previous.count) * gain).rounded(.up))
                        target = min(target, max(previous.count, needed))
                    }
                    phase = .watching(best: rate)
                    return
                }
                if gain - 1 >= growth.linearGainFraction * (ideal - 1) { factor = 4 }
            }
            if target >= maximum {
                phase = .watching(best: rate)
                return
            }
            grow(from: rate, by: factor)
        case .watching(let best):
            // A lossy link's first seconds flatter few connections (no losses yet); when the
            // aggregate later sinks well below its best, more connections may pay after all.
            if rate >= best {
                phase = .watching(best: rate)
            } else if rate < (lossSeen ? growth.lossyDeclineFraction : growth.declineFraction) * best,
                      reprobesLeft > 0, target < maximum,
                      remainingBytes.map({ Double($0) >= rate * growth.reprobeWorthSeconds }) ?? true {
                reprobesLeft -= 1
                grow(from: rate)
            }
        case .done:
            break
        }
    }

    /// The set-up time a measurement window is sized by: the fastest, unless the typical one
    /// shows a busy machine (``AdaptiveGrowth/busyMachineSetupRatio``).
    package static func windowBasis(fastest: Double, typical: Double?, growth: AdaptiveGrowth) -> Double {
        guard let typical, typical > growth.busyMachineSetupRatio * fastest else { return fastest }
        return typical
    }

    private mutating func grow(from rate: Double, by factor: Int = 2) {
        rampRestarts = 0
        previous = (rate, target)
        target = min(maximum, target * factor)
        // At the maximum too the step is measured once: one that bought nothing is given back,
        // a leap past what pays is cut back.
        phase = .growing
    }

    /// The bytes a transfer has received when it is past its start (see `established` in
    /// ``observe(now:receivedBytes:streaming:setupSeconds:typicalSetupSeconds:workLeft:remainingBytes:established:)``).
    package static let establishedBytes: Int64 = 256 << 10

    /// Doubles the count without judging the step just measured (``AdaptiveGrowth/burstFactor``):
    /// ``previous`` stays the last step that was judged.
    private mutating func growUnjudged(rate: Double, by factor: Int = 2) {
        guard target < maximum else {
            phase = .watching(best: rate)
            return
        }
        rampRestarts = 0
        target = min(maximum, target * factor)
    }

    /// The path was seen losing packets. A lossy link's first second, before losses set in,
    /// flatters few connections; from now on each connection is held to the small window its
    /// losses allow, so a count found before is doubled once (if still below the maximum), and
    /// a step that buys little is kept rather than given back.
    package mutating func pathLosesPackets() {
        guard isAdaptive, !lossSeen else { return }
        lossSeen = true
        guard case .watching = phase, target < maximum else { return }
        previous = nil
        window = nil
        windowMiddle = nil
        target = min(maximum, target * 2)
        phase = target >= maximum ? .done : .watching(best: 0)
    }

    /// Fresh connections proved no faster than the ones they replaced (``ReplacementJudge``): the
    /// server, not the connection, sets the pace, and more connections only share it (on a
    /// CPU-bound server each one also slows the others). Stop growing, and give back a step that
    /// is still being measured.
    package mutating func serverSetsThePace() {
        guard isAdaptive, phase != .done else { return }
        if phase == .growing, let previous, target > previous.count { target = previous.count }
        phase = .done
    }

    /// The server pushed back (429, 503, a refused or reset connection): stop growing, and give
    /// up one connection for each push (never below one). A fixed count becomes a maximum the
    /// same way: a server that serves three connections at a time is asked for three.
    package mutating func pushback() {
        phase = .done
        target = max(1, target - 1)
    }
}
