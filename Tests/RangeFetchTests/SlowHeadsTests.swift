import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``SlowHeads`` as a table: recoveries from slow starts seen (ages in seconds), then whether a
/// request still in its head, of a given age, is spared; and when heads are the server's own.
struct SlowHeadsTests {
    @Test(arguments: [
        // (first speed, later speed, leaves its head)
        (50e3, 50e6, true), (1e6, 8e6, true), (1e6, 7.9e6, false), (0, 1e6, false),
    ] as [(Double, Double, Bool)])
    func aHeadIsLeftAtEightTimesTheFirstSpeed(first: Double, later: Double, leaves: Bool) {
        #expect(SlowHeads().isExit(from: first, to: later) == leaves)
    }

    @Test(arguments: [
        // (head ages seen, set-up time, the server's own)
        ([1.0], 0.02, false),           // seen once
        ([1.0, 0.9], 0.02, true),       // 50 set-up times, twice: issue 33's h2 server
        ([0.2, 0.2], 0.02, false),      // 10 set-up times: TCP's slow start on a 20 ms link
        ([0.2, 0.6, 0.2], 0.02, false), // one long one among short ones
        ([0.1, 0.1], 0.001, false),     // 100 set-up times on a LAN, but a tenth of a second
        ([5.0, 9.0], 0.02, false),      // longer than 2 s: stalls, not heads
    ] as [([Double], Double, Bool)])
    func longHeadsSeenTwiceAreTheServers(ages: [Double], setup: Double, servers: Bool) {
        var heads = SlowHeads()
        for age in ages { heads.recovered(atAge: age, setupSeconds: setup) }
        #expect(heads.areTheServers == servers)
    }

    @Test(arguments: [
        // (recoveries seen, age, spared)
        ([], 0.5, false),
        ([1.0], 1.4, true),
        ([1.0], 1.5, false),
        ([0.4, 1.0, 0.6], 1.4, true),
        ([0.4, 1.0, 0.6], 1.6, false),
        // A "recovery" after a long stall is capped at 2 s: spared up to 3 s only.
        ([10.0], 2.9, true),
        ([10.0], 3.1, false),
    ] as [([Double], Double, Bool)])
    func aRequestStillInItsHeadIsSparedWhileItMayBe(recoveries: [Double], age: Double, spared: Bool) {
        var heads = SlowHeads()
        for age in recoveries { heads.recovered(atAge: age, setupSeconds: 0.001) }
        #expect(heads.spares(age: age) == spared)
    }
}

/// The scheduler on a simulated server whose every response begins slowly (as issue 33's h2
/// server): once a request was seen to come out of its slow head, the others still in theirs are
/// not taken over (each takeover had the victim's tail served twice once its head ended).
struct SlowHeadsSchedulerTests {
    @Test(arguments: [16, 8, 4])
    func requestsInTheServersSlowHeadAreNotTakenOver(connections: Int) throws {
        let plan = TransferSchedulerTests.plan(size: 64 << 20, connections: connections)
        var unsparing = TransferSchedulerTests.scheduler(.fixed(connections))
        unsparing.slowHeads.graceFactor = 0
        let before = ReplacementJudgeTests.slowStarting.run(plan, scheduler: unsparing, limit: 30)
        let outcome = ReplacementJudgeTests.slowStarting.run(plan, scheduler: TransferSchedulerTests.scheduler(.fixed(connections)), limit: 30)
        let heads = try #require(outcome.scheduler).slowHeads
        let comment: Comment = "-n \(connections): \(outcome.takeovers) takeovers (\(before.takeovers) unspared), \(outcome.requests) requests (\(before.requests)), \(outcome.seconds) s (\(before.seconds)), heads \(heads.longestSeconds ?? -1) s"
        #expect(heads.longestSeconds != nil, comment)
        #expect(outcome.takeovers <= before.takeovers, comment)
        #expect(outcome.seconds <= before.seconds * 1.1, comment)
    }
}
