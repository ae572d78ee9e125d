@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A link simulated in virtual time, for driving ``TransferScheduler`` without sockets: each
/// request waits a set-up time, then receives at the smaller of the per-connection cap and an
/// equal share of the link; chosen connections (by the order they were opened) trickle or stall.
struct SimulatedLink {
    /// Seconds from a request to its first byte.
    var setupSeconds = 0.001
    /// The set-up time of the n-th connection opened (1-based) when it is not ``setupSeconds``.
    var setupOf: @Sendable (Int) -> Double? = { _ in nil }
    /// Bytes per second one connection can carry at most.
    var perConnectionBytesPerSecond = Double.infinity
    /// Bytes per second the whole link carries, shared equally by the streaming connections.
    var linkBytesPerSecond = Double.infinity
    /// The rate of the n-th connection opened (1-based) when it is not a healthy one:
    /// e.g. `{ $0 % 4 == 0 ? 10_000 : nil }` makes every 4th trickle at 10 kB/s; 0 stalls it.
    var override: @Sendable (Int) -> Double? = { _ in nil }
    /// Clock time from which the n-th connection receives nothing more (a stall midway).
    var stallsAt: @Sendable (Int) -> Double? = { _ in nil }
    /// Clock time until which the n-th connection's bytes wait unread at our end (a loaded
    /// machine slow to read them): it delivers nothing till then, and says
    /// ``SchedulerTransfer/bytesWaiting``.
    var readsLateUntil: @Sendable (Int) -> Double? = { _ in nil }
    /// Clock time from which the n-th connection receives at another rate (a slowdown midway).
    var slowsAt: @Sendable (Int) -> (at: Double, bytesPerSecond: Double)? = { _ in nil }
    /// Every request's bytes count only if it ends whole (ranges with their own
    /// `Content-Digest`): a takeover throws its bytes away (``Outcome/discardedBytes``).
    var provenOnlyWhole = false
    /// Send as nginx's `limit_rate` does instead of evenly: by the clock's whole second `s`, a
    /// request started in second `s0` may have received `perConnectionBytesPerSecond × (s - s0 + 1)`
    /// bytes, and what that allows arrives at once (at the link's share).
    var sendsEachSecondAtOnce = false
    /// Seconds by which the n-th connection's bursts after its first come late (a loaded server
    /// or client).
    var burstDelay: @Sendable (Int) -> Double = { _ in 0 }
    /// A CPU-bound server that begins every response slowly (tiny HTTP/2 frames and PINGs), as
    /// `h2_fault_server.py` does: one thread serves its streams in turn, each turn `headUnit`
    /// bytes of a stream's first `headBytes` (at `headBytesPerSecond` of the server's time) or
    /// `bulkUnit` bytes of the rest (at ``linkBytesPerSecond``). A stream in its head gets a
    /// small share of the server while others stream in bulk.
    struct SlowHead {
        var headBytes: Int64 = 64 << 10
        var headBytesPerSecond: Double
        var headUnit: Double = 64
        var bulkUnit: Double = 262_144
    }
    var slowHead: SlowHead?
    /// A server that serves at most this many requests at once: one more is refused (as with
    /// 429 or 503), which the scheduler hears as pushback.
    var refusesAbove: Int?

    /// What a simulated download did.
    struct Outcome {
        var seconds: Double
        /// The scheduler's connection target over time.
        var targets: [Int]
        /// When each of ``targets`` was decided, seconds of virtual time.
        var decidedAt: [Double] = []
        var peakActive: Int
        var finalTarget: Int
        /// Requests cancelled so that a fresh connection could take over.
        var takeovers: Int
        var requests: Int
        /// Requests refused (``refusesAbove``).
        var refusals = 0
        /// Bytes takeovers threw away (``provenOnlyWhole``).
        var discardedBytes: Int64 = 0
        /// The scheduler at the end (for what it learnt: set-up time, connection lifetime).
        var scheduler: TransferScheduler?
    }

    /// Runs a download of `plan` with `scheduler` until every byte has arrived (or `limit`
    /// seconds of virtual time pass), in steps of `step` seconds.
    func run(_ plan: [ByteRange], scheduler initial: TransferScheduler, step: Double = 0.001,
             decisionEvery: Double = 0.02, limit: Double = 120) -> Outcome {
        var scheduler = initial
        struct Request { var id: Int; var connection: Int; var started: Double; var received: Int64 = 0; var carry = 0.0 }
        var segments: [Int: (range: ByteRange, done: Int64)] = [:]
        var requests: [Int: Request] = [:] // by segment id
        for (index, range) in plan.enumerated() { segments[index] = (range, 0) }
        var nextSegment = plan.count
        var nextRequest = 0
        var connectionsOpened = 0
        var outcome = Outcome(seconds: 0, targets: [], peakActive: 0, finalTarget: 0, takeovers: 0, requests: 0)
        var now = 0.0
        var nextDecision = 0.0
        var received: Int64 = 0

        func setup(_ connection: Int) -> Double { setupOf(connection) ?? setupSeconds }

        func startRequest(_ segment: Int) {
            nextRequest += 1
            connectionsOpened += 1
            requests[segment] = Request(id: nextRequest, connection: connectionsOpened, started: now)
            outcome.requests += 1
        }

        while now < limit {
            let open = segments.filter { $0.value.done < $0.value.range.count }
            if open.isEmpty { break }
            if now >= nextDecision {
                let view = open.map { id, segment in
                    SchedulerSegment(id: id, outstanding: ByteRange(segment.range.lower + segment.done, segment.range.upper),
                                     transfer: requests[id].map { request in
                                         SchedulerTransfer(id: request.id, startedAt: request.started, receivedBytes: request.received,
                                                           firstByteAt: request.received > 0
                                                               ? max(request.started + setup(request.connection), readsLateUntil(request.connection) ?? 0) : nil,
                                                           provenOnlyWhole: provenOnlyWhole,
                                                           bytesWaiting: request.received == 0 && now - request.started >= setup(request.connection)
                                                               && readsLateUntil(request.connection) != nil)
                                     })
                }
                for action in scheduler.decide(now: now, segments: view, receivedBytes: received) {
                    switch action {
                    case .start(let id):
                        if let refusesAbove, requests.count >= refusesAbove {
                            scheduler.notePushback()
                            outcome.refusals += 1
                        } else if requests[id] == nil {
                            startRequest(id)
                        }
                    case .split(let id, let offset):
                        guard let segment = segments[id], requests[id] != nil else { continue }
                        if let refusesAbove, requests.count >= refusesAbove {
                            scheduler.notePushback()
                            outcome.refusals += 1
                            continue
                        }
                        let next = segment.range.lower + segment.done
                        let cut = max(offset, next)
                        guard cut < segment.range.upper else { continue }
                        segments[nextSegment] = (ByteRange(cut, segment.range.upper), 0)
                        segments[id] = (ByteRange(segment.range.lower, cut), segment.done)
                        if cut == next {
                            if provenOnlyWhole, let victim = requests[id] {
                                outcome.discardedBytes += victim.received
                                // Its bytes are fetched again: the segment starts over.
                                segments[id] = (ByteRange(segment.range.lower, cut), segment.done - victim.received)
                            }
                            requests[id] = nil
                            outcome.takeovers += 1
                        }
                        startRequest(nextSegment)
                        nextSegment += 1
                    }
                }
                outcome.targets.append(scheduler.targetConnections)
                outcome.decidedAt.append(now)
                nextDecision = now + scheduler.decisionInterval(usually: decisionEvery)
            }
            outcome.peakActive = max(outcome.peakActive, requests.count)
            let streaming = requests.values.filter { now - $0.started >= setup($0.connection) && override($0.connection) == nil }.count
            let share = min(perConnectionBytesPerSecond, linkBytesPerSecond / Double(max(1, streaming)))
            for (id, request) in requests {
                guard now - request.started >= setup(request.connection), let segment = segments[id] else { continue }
                if let stall = stallsAt(request.connection), now >= stall { continue }
                if let late = readsLateUntil(request.connection), now < late { continue }
                var request = request
                var bytes: Int64
                if sendsEachSecondAtOnce, override(request.connection) == nil {
                    let clock = now - burstDelay(request.connection)
                    // The first second's allowance goes out with the response head; later ones
                    // at the (late) ticks.
                    let seconds = max(1, (clock.rounded(.down) - request.started.rounded(.down)) + 1)
                    let allowance = Int64(perConnectionBytesPerSecond * seconds) - request.received
                    let linkShare = linkBytesPerSecond / Double(max(1, streaming)) * step
                    bytes = max(0, min(allowance, Int64(min(linkShare, 1e15)), segment.range.count - segment.done))
                } else {
                    let head = slowHead.map { server in
                        let inHead = Double(requests.values.filter { now - $0.started >= setup($0.connection) && $0.received < server.headBytes }.count)
                        let inBulk = Double(streaming) - inHead
                        let turn = inHead * server.headUnit / server.headBytesPerSecond + inBulk * server.bulkUnit / linkBytesPerSecond
                        return (request.received < server.headBytes ? server.headUnit : server.bulkUnit) / max(turn, 1e-9)
                    }
                    let slowed = slowsAt(request.connection).flatMap { now >= $0.at ? $0.bytesPerSecond : nil }
                    let rate = slowed ?? override(request.connection) ?? head ?? share
                    request.carry += rate * step
                    bytes = min(Int64(request.carry), segment.range.count - segment.done)
                    request.carry -= Double(bytes)
                }
                request.received += bytes
                received += bytes
                segments[id] = (segment.range, segment.done + bytes)
                requests[id] = segment.done + bytes == segment.range.count ? nil : request
            }
            now += step
        }
        outcome.seconds = now
        outcome.finalTarget = scheduler.targetConnections
        outcome.scheduler = scheduler
        return outcome
    }
}
