import CCurl
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``RequestOutcome`` as a table: a request's end (its proof, final verdict, libcurl's result
/// and a few facts) in, the action, the fault against its source and its success out.
struct RequestOutcomeTests {
    typealias Action = RequestOutcome.Action

    static let shortEnd = DownloadError(.protocolViolation, "u: connection closed after 10 of 20 bytes")
    static let refused = DownloadError(.httpStatus(403), "u: refused")
    static let busy = DownloadError(.httpStatus(503), "u: busy")
    static let broken = DownloadError(.checksumMismatch, "u: piece 3 does not match")
    static let warning = DownloadWarning.pieceMismatch(url: "u", piece: 3, range: ByteRange(0, 10))

    struct Case: CustomTestStringConvertible, @unchecked Sendable {
        var name: String
        var proof = RangeProof.keep
        var verdict = ResponseVerdict.accept
        var transport = CURLE_OK
        var stoppedAtSegmentEnd = false
        var failure: (error: DownloadError, isFatal: Bool)?
        var receivedBytes: Int64 = 10
        var segmentDone = false
        var streamOfUnknownLength = false
        var action: Action
        /// The source-fault's `why`, when the request counts against its source.
        var fault: String?
        var succeeded = false
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "bytes that failed their proof are rejected, whatever else",
             proof: .reject(from: 4096, warning: warning, error: broken), verdict: .retry(busy, after: nil), transport: CURLE_RECV_ERROR,
             action: .reject(from: 4096, warning: warning, error: broken)),
        Case(name: "a stolen tail's unprovable bytes are dropped unblamed", proof: .unprovable(from: 8192),
             stoppedAtSegmentEnd: true, action: .unprovable(from: 8192)),
        Case(name: "a clean end of a finished segment is done", segmentDone: true, action: .done, succeeded: true),
        Case(name: "a stolen tail cut by us is done, not a failure", transport: CURLE_WRITE_ERROR, stoppedAtSegmentEnd: true,
             segmentDone: true, action: .done, succeeded: true),
        Case(name: "a clean end short of the segment is retried", action: .retry(shortEnd, after: nil), succeeded: true),
        Case(name: "a single stream of unknown length ends the file", streamOfUnknownLength: true, action: .endOfFile, succeeded: true),
        Case(name: "…but not when it broke off", transport: CURLE_PARTIAL_FILE, streamOfUnknownLength: true,
             action: .retry(shortEnd, after: nil), fault: CURLE_PARTIAL_FILE.explanation),
        Case(name: "a reset mid-body is a retry and a fault", transport: CURLE_RECV_ERROR,
             action: .retry(shortEnd, after: nil), fault: CURLE_RECV_ERROR.explanation),
        Case(name: "a reset before any byte is pushback", transport: CURLE_RECV_ERROR, receivedBytes: 0,
             action: .pushback(shortEnd, after: nil), fault: CURLE_RECV_ERROR.explanation),
        Case(name: "a refused connect is pushback", transport: CURLE_COULDNT_CONNECT, receivedBytes: 0,
             action: .pushback(shortEnd, after: nil), fault: CURLE_COULDNT_CONNECT.explanation),
        Case(name: "an untrusted certificate is not retried", transport: CURLE_PEER_FAILED_VERIFICATION,
             action: .fail(shortEnd), fault: CURLE_PEER_FAILED_VERIFICATION.explanation),
        Case(name: "a 503 is pushback with its Retry-After", verdict: .pushback(busy, after: 2), failure: (busy, false),
             action: .pushback(busy, after: 2), fault: busy.message),
        Case(name: "a retry verdict keeps its delay", verdict: .retry(busy, after: 1), failure: (busy, false),
             action: .retry(busy, after: 1), fault: busy.message),
        Case(name: "a refusal goes to the source's judgement", verdict: .reResolve(refused, status: 403), failure: (refused, true),
             action: .refused(refused, status: 403)),
        Case(name: "a digest mismatch without a check is asked again at once", verdict: .rejectRange(broken),
             action: .retry(broken, after: 0), succeeded: true),
        Case(name: "a fatal verdict fails the download, no fault", verdict: .fatal(refused), failure: (refused, true),
             action: .fail(refused)),
        Case(name: "ranges not honoured fall back to one stream", verdict: .oneStream(busy), failure: (busy, true),
             action: .fail(busy)),
    ]

    @Test(arguments: cases)
    func outcomes(_ test: Case) {
        let outcome = RequestOutcome(RequestOutcome.Facts(
            proof: test.proof, verdict: test.verdict, transport: test.transport, stoppedAtSegmentEnd: test.stoppedAtSegmentEnd,
            failure: test.failure, receivedBytes: test.receivedBytes, segmentDone: test.segmentDone,
            streamOfUnknownLength: test.streamOfUnknownLength, shortEnd: Self.shortEnd, transportDetail: nil))
        #expect(outcome.action == test.action)
        #expect(outcome.sourceFault?.why == test.fault)
        #expect(outcome.succeeded == test.succeeded)
        #expect(outcome.keepsBytes == !(test.action == .reject(from: 4096, warning: Self.warning, error: Self.broken)
                                         || test.action == .unprovable(from: 8192)))
    }

    @Test func aDroppedSourcesRetryNamesItsOwnFailure() {
        let outcome = RequestOutcome(RequestOutcome.Facts(proof: .keep, verdict: .accept, transport: CURLE_RECV_ERROR,
                                                          shortEnd: Self.shortEnd, transportDetail: "Connection reset by peer"))
        #expect(outcome.sourceFault?.why == "Connection reset by peer")
        #expect(outcome.sourceFault?.error.message == "\(Self.shortEnd.message); its source was dropped, the range goes to another")
    }
}
