import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``ReplacementJudge``: a replacement must beat what it replaced, and once replacements do not
/// (the server sets the pace), slow requests are left alone. Then the scheduler against a
/// simulated CPU-bound server whose every response begins slowly.
struct ReplacementJudgeTests {
    static let mebibyte: Int64 = 1 << 20

    /// A request of the range from `offset` started at `start`, with `bytes` delivered.
    static func request(_ id: Int, offset: Int64, start: Double, bytes: Int64) -> ReplacementJudge.Request {
        ReplacementJudge.Request(startOffset: offset, transfer: SchedulerTransfer(id: id, startedAt: start, receivedBytes: bytes,
                                                                                firstByteAt: bytes > 0 ? start : nil))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        /// The replacement's bytes after 0.2 s (it replaced a request at 100 kB/s, judged after 0.1 s).
        var replacementBytes: Int64
        var beaten: Int
        var failed: Int
        var testDescription: String { label }
    }

    @Test(arguments: [
        Case(label: "ten times as fast: beaten", replacementBytes: 200_000, beaten: 1, failed: 0),
        Case(label: "exactly twice as fast: beaten", replacementBytes: 40_000, beaten: 1, failed: 0),
        Case(label: "as slow: failed", replacementBytes: 20_000, beaten: 0, failed: 1),
        Case(label: "nothing yet: failed", replacementBytes: 0, beaten: 0, failed: 1),
    ])
    func aReplacementMustBeatWhatItReplaced(_ row: Case) {
        var judge = ReplacementJudge()
        judge.replacing(offset: 4096, victimRate: 100_000, verdictAfter: 0.1, now: 1.0)
        judge.replacing(offset: 8192, victimRate: 100_000, verdictAfter: 0.1, now: 1.0)
        #expect(!judge.mayReplace, "two trials at a time before any succeeded")
        judge.observe(now: 1.05, requests: [Self.request(7, offset: 4096, start: 1.0, bytes: row.replacementBytes / 4),
                                            Self.request(8, offset: 8192, start: 1.0, bytes: row.replacementBytes / 4)])
        #expect(judge.running == 2, "no verdict before the replacement has run as long as the victim was watched")
        judge.observe(now: 1.2, requests: [Self.request(7, offset: 4096, start: 1.0, bytes: row.replacementBytes),
                                           Self.request(8, offset: 8192, start: 1.0, bytes: row.replacementBytes)])
        #expect(judge.beaten == 2 * row.beaten && judge.failed == 2 * row.failed)
        #expect(judge.running == 0)
    }

    struct State: Sendable, CustomTestStringConvertible {
        var beaten: Int
        var failed: Int
        var running: Int
        var mayReplace: Bool
        var futile: Bool
        var testDescription: String { "\(beaten) beaten, \(failed) failed, \(running) running" }
    }

    /// The table in ``ReplacementJudge``'s documentation.
    @Test(arguments: [
        State(beaten: 0, failed: 0, running: 0, mayReplace: true, futile: false),
        State(beaten: 0, failed: 0, running: 1, mayReplace: true, futile: false),
        State(beaten: 0, failed: 0, running: 2, mayReplace: false, futile: false),
        State(beaten: 0, failed: 1, running: 0, mayReplace: true, futile: false),
        State(beaten: 1, failed: 0, running: 3, mayReplace: true, futile: false),
        State(beaten: 1, failed: 0, running: 4, mayReplace: false, futile: false),
        State(beaten: 0, failed: 2, running: 0, mayReplace: false, futile: true),
        State(beaten: 2, failed: 2, running: 0, mayReplace: true, futile: false),
        State(beaten: 3, failed: 2, running: 0, mayReplace: true, futile: false),
    ])
    func trialsRunOneAtATimeUntilOneSucceedsAndStopWhenFutile(_ row: State) {
        var judge = ReplacementJudge()
        var offset: Int64 = 0
        var now = 0.0
        // Drive trials to the wanted verdicts: a fast replacement beats, a stalled one fails.
        for (count, bytes) in [(row.beaten, Int64(1 << 30)), (row.failed, Int64(0))] {
            for _ in 0..<count {
                offset += 1
                judge.replacing(offset: offset, victimRate: 1_000, verdictAfter: 0.1, now: now)
                judge.observe(now: now + 0.2, requests: [Self.request(Int(offset), offset: offset, start: now, bytes: bytes)])
                now += 1
            }
        }
        for _ in 0..<row.running {
            offset += 1
            judge.replacing(offset: offset, victimRate: 1_000, verdictAfter: 0.1, now: now)
        }
        #expect(judge.beaten == row.beaten && judge.failed == row.failed && judge.running == row.running)
        #expect(judge.mayReplace == row.mayReplace)
        #expect(judge.isFutile == row.futile)
    }

    @Test func aTrialWhoseReplacementNeverStartedIsForgotten() {
        var judge = ReplacementJudge()
        judge.replacing(offset: 10, victimRate: 1_000, verdictAfter: 0.1, now: 0)
        judge.observe(now: 1, requests: [], waiting: [10])
        #expect(judge.running == 1)
        judge.observe(now: 2.5, requests: [], waiting: [10])
        #expect(judge.running == 0 && judge.beaten == 0 && judge.failed == 0)
    }

    /// A replacement of a request that had delivered nothing must still be healthy itself: a
    /// fresh request starving in a busy server's slow head is no success.
    @Test func aReplacementThatIsItselfSlowFailsWhateverItReplaced() {
        var judge = ReplacementJudge()
        judge.replacing(offset: 10, victimRate: 0, healthyRate: 1_000_000, verdictAfter: 0.1, now: 0)
        judge.observe(now: 0.2, requests: [Self.request(3, offset: 10, start: 0, bytes: 2_000)])
        #expect(judge.failed == 1 && judge.beaten == 0)
        judge.replacing(offset: 20, victimRate: 0, verdictAfter: 0.1, now: 1)
        judge.observe(now: 1.2, requests: [Self.request(4, offset: 20, start: 1, bytes: 0)])
        #expect(judge.failed == 2 && judge.beaten == 0, "nothing does not beat nothing")
    }

    /// On a fast link a replacement may finish its rest between two looks.
    @Test func aReplacementNeverSeenRunningNorWaitingFinishedAtOnce() {
        var judge = ReplacementJudge()
        judge.replacing(offset: 10, victimRate: 1_000, verdictAfter: 0.1, now: 0)
        judge.observe(now: 0, requests: [])
        #expect(judge.running == 1)
        judge.observe(now: 0.02, requests: [])
        #expect(judge.running == 0 && judge.beaten == 1)
    }

    @Test func aReplacementThatFinishesFastIsASuccess() {
        var judge = ReplacementJudge()
        judge.replacing(offset: 10, victimRate: 1_000, verdictAfter: 0.5, now: 0)
        judge.observe(now: 0.1, requests: [Self.request(3, offset: 10, start: 0.01, bytes: 1 << 20)])
        judge.observe(now: 0.12, requests: [])
        #expect(judge.beaten == 1 && judge.failed == 0 && judge.running == 0)
    }

    /// Alone, a stalled request set the pace itself and was never judged slow: an HTTP/2 stream
    /// that stopped without closing at `-n 1` waited for libcurl's 30 s low-speed limit.
    @Test func aLoneStalledRequestIsReplaced() {
        var link = SimulatedLink(setupSeconds: 0.002, perConnectionBytesPerSecond: 20e6)
        link.stallsAt = { $0 == 1 ? 0.3 : nil }
        let outcome = link.run([ByteRange(0, 16 * Self.mebibyte)], scheduler: TransferSchedulerTests.scheduler(.fixed(1)), limit: 30)
        #expect(outcome.takeovers == 1 && outcome.seconds < 3, "\(outcome.seconds) s, \(outcome.takeovers) takeovers")
    }

    // MARK: A CPU-bound server whose every response begins slowly

    /// 64 KiB heads at 8 MB/s of the server's whole time, then 230 MB/s shared (as the test
    /// server, `h2_fault_server.py`, measured on loopback).
    static let slowStarting: SimulatedLink = {
        var link = SimulatedLink(setupSeconds: 0.002, linkBytesPerSecond: 230e6)
        link.slowHead = SimulatedLink.SlowHead(headBytesPerSecond: 8e6)
        return link
    }()

    /// The livelock: a request judged slow was replaced by one that started over in the same slow
    /// head, on a server every extra request slows down.
    @Test(arguments: [16, 8, 4])
    func aSlowStartingServerIsNotChurned(connections: Int) {
        let size = 64 * Self.mebibyte
        let one = Self.slowStarting.run(TransferSchedulerTests.plan(size: size, connections: 1),
                                        scheduler: TransferSchedulerTests.scheduler(.fixed(1)))
        let plan = TransferSchedulerTests.plan(size: size, connections: connections)
        let many = Self.slowStarting.run(plan, scheduler: TransferSchedulerTests.scheduler(.fixed(connections)), limit: 30)
        let comment: Comment = "-n \(connections): \(many.seconds) s against \(one.seconds) s on one connection, \(many.takeovers) takeovers, \(many.requests) requests"
        #expect(many.seconds <= 2 * one.seconds, comment)
        #expect(many.takeovers <= 4, comment)
        #expect(many.requests <= plan.count + 2 * connections, comment)
    }

    /// What a fresh request loses at its start is learnt: a slow head's time on this server, next
    /// to nothing on a clean fast link (where splits stay as eager as before).
    @Test func theStartLagIsLearnt() throws {
        let size = 64 * Self.mebibyte
        let plan = TransferSchedulerTests.plan(size: size, connections: 16)
        let slow = try #require(Self.slowStarting.run(plan, scheduler: TransferSchedulerTests.scheduler(.fixed(16))).scheduler)
        #expect(slow.startLagSeconds > 0.05, "\(slow.startLagSeconds) s")
        let fast = try #require(TransferSchedulerTests.fast.run(plan, scheduler: TransferSchedulerTests.scheduler(.fixed(16))).scheduler)
        #expect(fast.startLagSeconds < 0.005, "\(fast.startLagSeconds) s")
    }

    /// The same server under `-n auto`: a step up buys nothing (the server, not the connection,
    /// is what limits), so it is given back, once tried.
    @Test func autoDoesNotGrowOnASlowStartingServer() {
        let size = 64 * Self.mebibyte
        let one = Self.slowStarting.run(TransferSchedulerTests.plan(size: size, connections: 1),
                                        scheduler: TransferSchedulerTests.scheduler(.fixed(1)))
        let auto = Self.slowStarting.run(TransferSchedulerTests.plan(size: size, connections: 16),
                                         scheduler: TransferSchedulerTests.scheduler(.adaptive(maximum: 64)), limit: 30)
        let comment: Comment = "auto: \(auto.seconds) s against \(one.seconds) s, targets \(Set(auto.targets).sorted()), \(auto.takeovers) takeovers, \(auto.requests) requests"
        #expect(auto.seconds <= 2 * one.seconds, comment)
        #expect(auto.takeovers <= 4, comment)
        #expect(auto.peakActive <= 32, comment)
        #expect(auto.finalTarget <= 16, comment)
    }
}
