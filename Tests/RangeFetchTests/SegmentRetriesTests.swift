import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``SegmentRetries``: retries dated from the round's `now`, and the error that gives up.
struct SegmentRetriesTests {
    @Test func aRetryIsDatedFromTheRoundsInstantAndGivesUpOnTheLastTry() throws {
        let policy = RetryPolicy(maximumTries: 2, baseDelaySeconds: 0.5)
        var retries = SegmentRetries(policy: policy, maximumConnections: 4)
        let segment = EngineSegment(id: 0, state: SegmentState(range: ByteRange(0, 100)), grid: nil)
        let error = DownloadError(.protocolViolation, "u: connection closed")
        let notice = try retries.retry(segment, after: error, retryAfter: 3, blame: .segment, receivedBytes: 0, now: 500)
        #expect(notice.retry == 1)
        #expect(segment.readyAt == 500 + notice.delaySeconds)
        #expect(notice.delaySeconds == policy.delay(beforeRetry: 1, retryAfterSeconds: 3, jitter: 0))
        #expect(throws: DownloadError.self) {
            try retries.retry(segment, after: error, retryAfter: nil, blame: .segment, receivedBytes: 0, now: 501)
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var tries: Int
        var meagreTries: Int
        var says: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "tries counted", tries: 3, meagreTries: 1, says: "x — gave up after 3 tries"),
        Case(name: "every try meagre: the server ends responses early", tries: 3, meagreTries: 3,
             says: "x — gave up after 3 tries (each brought under \(ByteCount.format(RetryBudget.meagreTryBytes)): the server ends every response early)"),
    ]

    @Test(arguments: cases)
    func givingUp(_ test: Case) {
        let error = SegmentRetries.givingUp(DownloadError(.protocolViolation, "x"), tries: test.tries, meagreTries: test.meagreTries)
        #expect(error.message == test.says)
    }
}
