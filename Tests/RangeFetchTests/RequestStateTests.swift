import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``RequestState`` as tables: a request's events (its head, chunks of body bytes, the limiter)
/// in, its phase and the action for libcurl out. No handle, no socket.
struct RequestStateTests {
    static let url = "http://127.0.0.1/f.bin"
    static let remote = RemoteFile(url: url, size: 1000, acceptsRanges: true, etag: "\"e1\"",
                                   lastModified: nil, suggestedName: "f.bin", advertisedDigests: [])
    static let asked = ByteRange(100, 200)
    static let answer = RequestState.Answer(httpVersion: "h1.1", effectiveURL: url, wasRedirected: false)

    static func head(_ lines: [String]) -> ResponseHead {
        var head = ResponseHead()
        for line in lines + [""] { head.consume(line: line + "\r\n") }
        return head
    }

    static let partial = head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000", "Content-Length: 100", "ETag: \"e1\""])
    static let forbidden = head(["HTTP/1.1 403 Forbidden", "Content-Length: 5000"])

    /// A state whose head is `head` (judged).
    static func judged(_ head: ResponseHead = partial, asked: ByteRange? = asked) -> RequestState {
        var state = RequestState(url: url, asked: asked, remote: remote, toUserURL: false)
        state.head(head, answer: answer)
        return state
    }

    /// Feeds `count` bytes; the limiter says `allows`.
    static func feed(_ state: inout RequestState, _ count: Int, room: Int64, status: Int = 206, allows: Bool = true,
                     encoded: Int64 = 0) -> RequestState.BytesAction {
        let bytes = [UInt8](repeating: 0x41, count: count)
        return bytes.withUnsafeBytes { chunk in
            state.bytes(chunk, status: status, room: room, limiterAllows: { allows }, encodedBytes: { encoded })
        }
    }

    @Test func anAcceptedHeadReceivesAndARefusedOneIsRefused() {
        let accepted = Self.judged()
        #expect(accepted.phase == .receiving && accepted.headJudged && accepted.failure == nil)
        #expect(accepted.provesBody(Self.partial))
        #expect(accepted.answer == Self.answer)

        let refused = Self.judged(Self.forbidden)
        #expect(refused.phase == .refused)
        #expect(refused.failure?.isFatal == !refused.verdict.isRetriable)
        #expect(refused.failure != nil && !refused.provesBody(Self.forbidden))
        #expect(!refused.tookEveryByte)
    }

    @Test func aHeadIsJudgedOnce() {
        var state = Self.judged()
        let mayTake = state.head(Self.forbidden, answer: Self.answer)
        #expect(mayTake)
        #expect(state.phase == .receiving)
    }

    struct BytesCase: Sendable, CustomTestStringConvertible {
        var name: String
        var count: Int
        var room: Int64
        var allows = true
        var expected: RequestState.BytesAction
        var phase: RequestState.Phase
        var testDescription: String { name }
    }

    static let bytesCases: [BytesCase] = [
        BytesCase(name: "inside the segment: all taken", count: 40, room: 100, expected: .take(40), phase: .receiving),
        BytesCase(name: "past the segment's end: what fits", count: 40, room: 10, expected: .take(10), phase: .receiving),
        BytesCase(name: "no room left", count: 40, room: 0, expected: .take(0), phase: .receiving),
        BytesCase(name: "the limiter's bucket is empty", count: 40, room: 100, allows: false, expected: .pause, phase: .pausedByLimiter),
    ]

    @Test(arguments: bytesCases)
    func bodyBytesAreTakenPausedOrCut(_ row: BytesCase) {
        var state = Self.judged()
        #expect(Self.feed(&state, row.count, room: row.room, allows: row.allows) == row.expected)
        #expect(state.phase == row.phase)
        #expect(state.firstByte == .undated)
    }

    @Test func aPausedRequestGoesOnWhenResumedOrWhenTheLimiterAllows() {
        var state = Self.judged()
        #expect(Self.feed(&state, 10, room: 100, allows: false) == .pause)
        #expect(state.isPaused && state.tookEveryByte)
        state.resume()
        #expect(state.phase == .receiving)
        #expect(Self.feed(&state, 10, room: 100, allows: false) == .pause)
        #expect(Self.feed(&state, 10, room: 100) == .take(10))
        #expect(state.phase == .receiving)
    }

    @Test func takenBytesAreCountedAndAChunkPastTheEndStopsAsACutOrAsOverlong() {
        // The segment's end moved below what was asked: a stolen tail, with what was unread.
        var cut = Self.judged()
        #expect(cut.took(10, of: 40, badPiece: false, segmentEnd: 150, unread: { CutWaste.Unread(bytes: 500, receiveSpace: 1000) }) == 0)
        #expect(cut.phase == .cutAtSegmentEnd && cut.aheadOfCut == CutWaste.Unread(bytes: 530, receiveSpace: 1000))
        #expect(cut.stoppedAtSegmentEnd && cut.failure == nil && cut.bytesReceived == 10 && !cut.tookEveryByte)
        var unknown = Self.judged()
        _ = unknown.took(10, of: 40, badPiece: false, segmentEnd: 150, unread: { nil })
        #expect(unknown.phase == .cutAtSegmentEnd && unknown.aheadOfCut == nil)

        // At the end asked for: the server sent more than it announced.
        var overlong = Self.judged()
        #expect(overlong.took(10, of: 40, badPiece: false, segmentEnd: 200, unread: { nil }) == 0)
        #expect(overlong.isOverlong && !overlong.stoppedAtSegmentEnd)

        var whole = Self.judged()
        #expect(whole.took(40, of: 40, badPiece: false, segmentEnd: 200, unread: { nil }) == 40)
        #expect(whole.phase == .receiving && whole.bytesReceived == 40)

        var bad = Self.judged()
        #expect(bad.took(40, of: 40, badPiece: true, segmentEnd: 200, unread: { nil }) == 0)
        #expect(bad.phase == .badPiece && bad.bytesReceived == 40)
        #expect(Self.feed(&bad, 10, room: 100) == .answer(0))
    }

    @Test func aRefusedResponseKeepsTheStartOfItsErrorBodyThenStops() {
        var state = Self.judged(Self.forbidden)
        #expect(Self.feed(&state, 1500, room: 100, status: 403) == .answer(1500))
        #expect(Self.feed(&state, 1500, room: 100, status: 403) == .answer(0))
        #expect(state.errorBody.count == RequestState.errorBodyBytes)
        #expect(state.firstByte == .notYet, "an error body is not the first byte of the file")
        #expect(state.bytesReceived == 0)
    }

    @Test func aPlainRequestsDecodedBodyIsHeldToTheLimit() {
        let gzip = Self.head(["HTTP/1.1 200 OK", "Content-Encoding: gzip"])
        var state = RequestState(url: Self.url, asked: nil, remote: RemoteFile(url: Self.url, size: nil, acceptsRanges: false, etag: nil, lastModified: nil, suggestedName: "f.bin", advertisedDigests: []), toUserURL: false)
        state.limitsDecodedBytes = true
        state.head(gzip, answer: Self.answer)
        let room = Int64(1) << 40
        #expect(Self.feed(&state, 4096, room: room, status: 200, encoded: 1024) == .take(4096))
        _ = state.took(4096, of: 4096, badPiece: false, segmentEnd: room, unread: { nil })
        // Past the floor, and more than the ratio allows for the 1 KiB that came over the wire.
        var grown = state
        #expect(Self.feed(&grown, Int(DecodedSizeLimit.floorBytes), room: room, status: 200, encoded: 1024) == .answer(0))
        #expect(grown.phase == .decodedTooLarge)
        guard let error = grown.failure?.error else {
            Issue.record("the decoded body was let grow")
            return
        }
        #expect(grown.failure?.isFatal == true && error.message.contains("gzip-encoded"))
        #expect(grown.finalVerdict(head: gzip, proof: nil) == .fatal(error))

        // Without the hold (the user asked for an encoding), it grows.
        var free = RequestState(url: Self.url, asked: nil, remote: Self.remote, toUserURL: false)
        free.head(gzip, answer: Self.answer)
        #expect(Self.feed(&free, Int(DecodedSizeLimit.floorBytes), room: room, status: 200, encoded: 1)
            == .take(Int(DecodedSizeLimit.floorBytes)))
    }

    @Test func theFirstByteIsDatedOnceInTheRoundItCameIn() {
        var state = Self.judged()
        state.dateFirstByte(now: 1)
        #expect(state.firstByteAt == nil, "no byte yet")
        _ = Self.feed(&state, 10, room: 100)
        state.dateFirstByte(now: 2)
        _ = Self.feed(&state, 10, room: 100)
        state.dateFirstByte(now: 3)
        #expect(state.firstByteAt == 2)
    }

    @Test func theFinalVerdictWeighsTheContentDigestAndTheErrorBody() {
        let accepted = Self.judged()
        #expect(accepted.finalVerdict(head: Self.partial, proof: nil) == .accept)
        #expect(accepted.finalVerdict(head: Self.partial, proof: .matched) == .accept)
        if case .rejectRange = accepted.finalVerdict(head: Self.partial, proof: .mismatched(algorithm: .sha256, expected: "a", actual: "b")) {
        } else {
            Issue.record("a mismatched Content-Digest was not rejected")
        }
        let refused = Self.judged(Self.forbidden)
        #expect(refused.finalVerdict(head: Self.forbidden, proof: nil) != .accept)
    }
}
