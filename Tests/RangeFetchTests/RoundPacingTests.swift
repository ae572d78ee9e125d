import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``RoundPacing`` as tables: the poll wait after a round, and which rounds are trickles.
struct RoundPacingTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var paused = false
        /// Seconds from now.
        var nextDecision: Double
        var readyAt: [Double] = []
        var milliseconds: Int32
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a paused request polls every 5 ms", paused: true, nextDecision: 1, milliseconds: 5),
        Case(name: "idle waits at most 100 ms", nextDecision: 5, milliseconds: 100),
        Case(name: "a decision due sooner wakes the loop for it", nextDecision: 0.03125, milliseconds: 31),
        Case(name: "a retry due sooner wakes the loop for it", nextDecision: 0.0625, readyAt: [0.015625, 0.03125], milliseconds: 15),
        Case(name: "a retry already due is not waited for", nextDecision: 0.0625, readyAt: [-1], milliseconds: 62),
        Case(name: "never less than 1 ms", nextDecision: 0.0001, milliseconds: 1),
        Case(name: "a decision overdue still waits 1 ms", nextDecision: -2, milliseconds: 1),
    ]

    @Test(arguments: cases)
    func pollWaits(_ test: Case) {
        // At 0 the offsets below are exact; at a real monotonic instant `now + 0.1 - now` may come
        // out a hair under 0.1, and the idle wait 99 ms (the wait is truncated to whole ms).
        let now = 0.0
        let wait = RoundPacing.pollMilliseconds(now: now, paused: test.paused, nextDecision: now + test.nextDecision,
                                                readyAt: test.readyAt.map { now + $0 })
        #expect(wait == test.milliseconds)
    }

    @Test func trickles() {
        #expect(RoundPacing.isTrickle(movedBytes: 4096, anyEnded: false, anyRunning: true))
        #expect(!RoundPacing.isTrickle(movedBytes: 64 << 10, anyEnded: false, anyRunning: true))
        #expect(!RoundPacing.isTrickle(movedBytes: 0, anyEnded: true, anyRunning: true))
        #expect(!RoundPacing.isTrickle(movedBytes: 0, anyEnded: false, anyRunning: false))
    }
}
