import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `-n auto`'s search as a pure value, fed an aggregate rate that depends only on the count:
/// the smaller of the count times a per-connection cap and the path's rate.
struct ConnectionPolicyTests {
    static let mebibyte = 1_048_576.0

    struct Case: CustomTestStringConvertible, Sendable {
        var perConnection: Double
        var path: Double
        var maximum: Int
        /// The counts tried, in order, and where the search settles.
        var visits: [Int]
        var settles: Int
        var testDescription: String { "cap \(perConnection / ConnectionPolicyTests.mebibyte) MiB/s, path \(path / 1e6) MB/s, max \(maximum)" }
    }

    static let cases: [Case] = [
        // 12 MiB/s per connection on a 400 MB/s path: from 16, a linear doubling leaps to 64,
        // which buys nothing over 32 and is given back.
        Case(perConnection: 12 * mebibyte, path: 400e6, maximum: 64, visits: [16, 32, 64, 32], settles: 32),
        // 6 MiB/s: 64 are needed, the default ceiling, reached in two steps.
        Case(perConnection: 6 * mebibyte, path: 400e6, maximum: 64, visits: [16, 32, 64], settles: 64),
        // 25 MiB/s (the bench relay) on a 400 MB/s path: 16 carry it; 32 buys nothing.
        Case(perConnection: 25 * mebibyte, path: 400e6, maximum: 64, visits: [16, 32, 16], settles: 16),
        // 25 MiB/s on a 250 MB/s path: the same; the search never goes below where it starts.
        Case(perConnection: 25 * mebibyte, path: 250e6, maximum: 64, visits: [16, 32, 16], settles: 16),
        // No cap: the path is full from the start, and 32 is given back.
        Case(perConnection: .infinity, path: 400e6, maximum: 64, visits: [16, 32, 16], settles: 16),
        // A given ceiling (--max-connections 40) is respected.
        Case(perConnection: 6 * mebibyte, path: 400e6, maximum: 40, visits: [16, 32, 40], settles: 40),
        // 10 MB/s on 100 MB/s: 10 would do; 16 is where the search starts and stays.
        Case(perConnection: 10e6, path: 100e6, maximum: 32, visits: [16, 32, 16], settles: 16),
        // The old ceiling: 16 from the start, nothing to search.
        Case(perConnection: 12 * mebibyte, path: 400e6, maximum: 16, visits: [16], settles: 16),
        // A ceiling below the start (--max-connections 8) is where it starts and stays.
        Case(perConnection: 6 * mebibyte, path: 400e6, maximum: 8, visits: [8], settles: 8),
    ]

    @Test(arguments: cases)
    func searchFindsTheCountTheCapNeeds(_ link: Case) {
        var policy = ConnectionPolicy.adaptive(maximum: link.maximum)
        var visits = [policy.target]
        var now = 0.0
        var received = 0.0
        for _ in 0..<200 {
            policy.observe(now: now, receivedBytes: Int64(received), streaming: policy.target, setupSeconds: 0.001, workLeft: true)
            if policy.target != visits.last { visits.append(policy.target) }
            let rate = min(Double(policy.target) * link.perConnection, link.path)
            now += 0.02
            received += rate * 0.02
        }
        #expect(visits == link.visits)
        #expect(policy.target == link.settles)
        #expect(policy.isSettled)
    }

    /// What sizes the windows: the fastest set-up time, unless the typical one is over 4 times
    /// it (a busy machine).
    @Test(arguments: [
        (0.003, Double?.none, 0.003),   // only the fastest known
        (0.003, 0.006, 0.003),          // behind a cap: 2x
        (0.003, 0.012, 0.003),          // 4x: still the path
        (0.003, 0.06, 0.06),            // an unthrottled loopback's saturated loop: 20x
        (0.04, 0.05, 0.04),             // a WAN: the round trip either way
    ])
    func windowBasis(fastest: Double, typical: Double?, basis: Double) {
        #expect(ConnectionPolicy.windowBasis(fastest: fastest, typical: typical, growth: .init()) == basis)
    }

    /// A server that refuses past 20 while auto grows: each refusal gives one back and the
    /// search stops, below the count that provoked it.
    @Test func pushbackPastSixteenStopsTheSearch() {
        var policy = ConnectionPolicy.adaptive(maximum: 64)
        var now = 0.0
        var received = 0.0
        while policy.target < 32 {
            policy.observe(now: now, receivedBytes: Int64(received), streaming: policy.target, setupSeconds: 0.001, workLeft: true)
            now += 0.02
            received += Double(policy.target) * 6 * Self.mebibyte * 0.02
        }
        for _ in 0..<(policy.target - 20) { policy.pushback() }
        #expect(policy.target == 20)
        #expect(policy.isSettled)
        for _ in 0..<100 {
            now += 0.02
            received += 20 * 6 * Self.mebibyte * 0.02
            policy.observe(now: now, receivedBytes: Int64(received), streaming: 20, setupSeconds: 0.001, workLeft: true)
        }
        #expect(policy.target == 20)
    }

    /// Fed one observation per millisecond at `rate(time, target)` bytes per second with every
    /// connection streaming, from `start` until `until` (or until the target changes, with
    /// `untilChange`); returns the target then.
    static func drive(_ policy: inout ConnectionPolicy, from start: Double = 0, until: Double, received: inout Int64,
                      untilChange: Bool = false, rate: (Double, Int) -> Double) -> Int {
        var now = start
        let first = policy.target
        while now < until && !(untilChange && policy.target != first) {
            received += Int64(rate(now, policy.target) / 1000)
            policy.observe(now: now, receivedBytes: received, streaming: policy.target, setupSeconds: 0.001, workLeft: true)
            now += 0.001
        }
        return policy.target
    }

    /// A window across a ramp (every connection in a slow head, then streaming) is measured
    /// again: the step after it is judged on the streaming rate, not credited with the ramp.
    @Test func aWindowAcrossARampIsMeasuredAgain() {
        var policy = ConnectionPolicy.adaptive(maximum: 64)
        var received: Int64 = 0
        // 0.2 s of slow heads at 2 MB/s, then 200 MB/s whatever the count (a server-bound rate).
        let rate = { (time: Double, _: Int) in time < 0.2 ? 2e6 : 200e6 }
        #expect(Self.drive(&policy, until: 0.2, received: &received, rate: rate) == 16)
        // Measured across the ramp, 16 looked slow and 32 ten times faster: a leap to 64, cut
        // back to 32. Measured after it, 32 buys nothing over 16 and is given back.
        #expect(Self.drive(&policy, from: 0.2, until: 3, received: &received, rate: rate) == 16)
    }

    /// A server that paces each connection (nginx's `limit_rate`: each request's first second at
    /// once, then nothing until its clock ticks): right after 16 bursts that came at 3 GB/s the
    /// window hears nothing. The count quadruples at once instead of waiting a second for the
    /// tick; a path that was never faster than now (a slow head, then bulk) is judged as ever.
    /// Nor is a server whose streams went quiet before each had its first 256 KiB (a CPU-bound
    /// HTTP/2 server after one fast stream, every other stream in its slow head): its first
    /// window is judged as any (a first step doubles), and the silence after it waits.
    @Test(arguments: [(true, true, 64), (false, true, 16), (true, false, 32)])
    func connectionsPacedByTheServerQuadrupleAtOnce(burstFirst: Bool, pastTheirStart: Bool, target: Int) {
        var policy = ConnectionPolicy.adaptive(maximum: 64)
        var received: Int64 = 0
        var now = 0.0
        // Each of 16 connections gets 1 MiB within the first 5 ms, or trickles (2 MB/s in all).
        while now < 0.08 {
            received += burstFirst ? (now < 0.005 ? 16 * 1048576 / 5 : 0) : 2000
            policy.observe(now: now, receivedBytes: received, streaming: policy.target, setupSeconds: 0.001, workLeft: true,
                           established: pastTheirStart ? policy.target : 1)
            now += 0.001
        }
        #expect(policy.target == target)
    }

    /// A settled count is tried higher again when the aggregate sinks, but not in a download's
    /// last second: there the rate sinks because its ranges end (an uncapped loopback went from
    /// 16 to 32 at 823 of 1,024 MiB).
    @Test(arguments: [(Int64(100) << 20, 16), (Int64(4) << 30, 32)])
    func aSinkingRateNearTheEndIsNotReprobed(remaining: Int64, target: Int) {
        var policy = ConnectionPolicy.adaptive(maximum: 64)
        var received: Int64 = 0
        var now = 0.0
        // 800 MB/s whatever the count: 32 buys nothing and is given back, and 16 is watched.
        while now < 0.5 {
            received += 800_000
            policy.observe(now: now, receivedBytes: received, streaming: policy.target, setupSeconds: 0.001, workLeft: true)
            now += 0.001
        }
        #expect(policy.target == 16)
        // Then the rate halves, with `remaining` bytes still to come.
        while now < 2 && policy.target == 16 {
            received += 400_000
            policy.observe(now: now, receivedBytes: received, streaming: policy.target, setupSeconds: 0.001,
                           workLeft: true, remainingBytes: remaining)
            now += 0.001
        }
        #expect(policy.target == target)
    }

    /// When fresh connections prove no faster than those they replaced, auto stops and gives back
    /// a step under measurement; a fixed count is the user's.
    @Test(arguments: [(false, 0, 16), (false, 1, 16), (true, 0, 16)])
    func whenTheServerSetsThePaceAutoStopsGrowing(fixed: Bool, doublings: Int, target: Int) {
        var policy = fixed ? ConnectionPolicy.fixed(16) : .adaptive(maximum: 64)
        var received: Int64 = 0
        // A per-connection cap of 1 MB/s: every step is linear.
        let capped = { (_: Double, count: Int) in Double(count) * 1e6 }
        if doublings > 0 {
            #expect(Self.drive(&policy, until: 2, received: &received, untilChange: true, rate: capped) == 32)
        }
        policy.serverSetsThePace()
        #expect(policy.target == target)
        #expect(policy.isSettled)
        #expect(Self.drive(&policy, from: 10, until: 12, received: &received, rate: capped) == target,
                "grew after the server was found to set the pace")
    }
}
