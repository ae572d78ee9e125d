import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``RetryBudget`` as tables: a sequence of failures (blame, bytes received by then) in, the
/// decision after each out. Three tries per segment, four connections.
struct RetryBudgetTests {
    typealias Blame = RetryBudget.Blame

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        /// Each failure: how it counts, and the download's received bytes when it happened.
        var failures: [(Blame, Int64)]
        /// The decision after each failure: a try number, or `-n` for giving up after n tries.
        var expected: [Int]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a segment gives up on its third try", failures: [(.segment, 0), (.segment, 0), (.segment, 0)],
             expected: [1, 2, -3]),
        Case(name: "not the segment's fault counts nothing", failures: [(.none, 0), (.none, 0), (.none, 0), (.segment, 0)],
             expected: [1, 1, 1, 1]),
        Case(name: "pushback while bytes arrive restarts at try 1",
             failures: [(.pushback, 100), (.pushback, 200), (.pushback, 300), (.pushback, 400)],
             expected: [1, 1, 1, 1]),
        Case(name: "pushback with no progress counts up", failures: [(.pushback, 100), (.pushback, 100), (.pushback, 100)],
             expected: [1, 2, -3]),
        Case(name: "the first failure is never progress", failures: [(.pushback, 500), (.pushback, 500)],
             expected: [1, 2]),
    ]

    @Test(arguments: cases)
    func decisions(_ test: Case) {
        var budget = RetryBudget(maximumTries: 3, maximumConnections: 4)
        var tries = 0
        let decisions = test.failures.map { blame, received -> Int in
            switch budget.charge(blame, segmentTries: &tries, receivedBytes: received) {
            case .retry(let tries): tries
            case .giveUp(let tries): -tries
            }
        }
        #expect(decisions == test.expected)
    }

    /// A failed try is progress only when it brought 64 KiB, or the whole rest of its range.
    @Test func aTryThatBringsAFewBytesIsNoProgress() {
        let rows: [(gained: Int64, rest: Int64, progress: Bool)] = [
            (0, 64 << 20, false), (100, 64 << 20, false), ((64 << 10) - 1, 64 << 20, false),
            (64 << 10, 64 << 20, true), (100, 100, true), (99, 100, false), (0, 0, false),
        ]
        for row in rows {
            #expect(RetryBudget.isProgress(gained: row.gained, rest: row.rest) == row.progress, "\(row)")
        }
    }

    /// With one try allowed, a failure that is not the segment's (a dropped source, a fresh
    /// signed URL) is still retried; its own failure is not.
    @Test func oneTryStillSurvivesFailuresThatAreNotTheSegments() {
        var budget = RetryBudget(maximumTries: 1, maximumConnections: 4)
        var tries = 0
        #expect(budget.charge(.none, segmentTries: &tries, receivedBytes: 0) == .retry(tries: 1))
        #expect(budget.charge(.segment, segmentTries: &tries, receivedBytes: 0) == .giveUp(tries: 1))
    }

    /// Many segments failing with no byte arriving anywhere: the download gives up once the
    /// failures reach tries + connections, though no one segment reached its limit.
    @Test func downloadWideFailuresGiveUp() {
        var budget = RetryBudget(maximumTries: 3, maximumConnections: 4)
        var decisions: [RetryBudget.Decision] = []
        for _ in 0..<7 {
            var tries = 0  // a different segment each time
            decisions.append(budget.charge(.segment, segmentTries: &tries, receivedBytes: 0))
        }
        #expect(decisions.dropLast().allSatisfy { $0 == .retry(tries: 1) })
        #expect(decisions.last == .giveUp(tries: 1))
    }

    /// Progress anywhere clears the download-wide count.
    @Test func progressClearsTheDownloadWideCount() {
        var budget = RetryBudget(maximumTries: 3, maximumConnections: 4)
        for _ in 0..<6 {
            var tries = 0
            _ = budget.charge(.segment, segmentTries: &tries, receivedBytes: 0)
        }
        #expect(budget.failuresWithoutProgress == 6)
        budget.segmentProgressed()
        var tries = 0
        #expect(budget.charge(.segment, segmentTries: &tries, receivedBytes: 0) == .retry(tries: 1))
        #expect(budget.failuresWithoutProgress == 1)
    }
}
