import RangeFetchBase

/// One request's life as a value, in the shape of async-http-client's `HTTPRequestStateMachine`:
/// the libcurl-facing ``SegmentTransfer`` hands it each event (the head, each chunk of body
/// bytes, the limiter letting it go on) and does what it answers. It holds no handle, no buffer
/// and no clock; how the ended request turns out is ``RequestOutcome``'s to say.
///
/// | phase              | on the head                   | on body bytes                                             |
/// |--------------------|-------------------------------|-----------------------------------------------------------|
/// | `awaitingHead`     | `receiving`, or `refused`     | (the head is judged first)                                |
/// | `receiving`        | –                             | take what fits in the segment; `pausedByLimiter` when the limiter has no tokens; `decodedTooLarge` past ``DecodedSizeLimit``; past the segment's end, `cutAtSegmentEnd` (a stolen tail) or `overlong`; `badPiece` when a metalink piece fails |
/// | `pausedByLimiter`  | –                             | as `receiving` (libcurl delivers again once resumed)      |
/// | `refused`          | –                             | keep an error body's first ``errorBodyBytes``, then stop  |
/// | any other          | –                             | stop                                                      |
package struct RequestState {
    /// (No payloads: the phase is checked on every chunk, and a plain value costs nothing to
    /// copy. What a phase carries is in ``failure`` and ``aheadOfCut``.)
    package enum Phase: Equatable {
        case awaitingHead
        case receiving
        /// The `--max-speed` bucket was empty; the engine resumes it (``resume()``).
        case pausedByLimiter
        /// The head was not usable (its ``ResponseVerdict``, in ``failure``).
        case refused
        /// The segment's end moved below what was asked (work stealing) and was reached.
        case cutAtSegmentEnd
        /// The server sent more bytes than the range it announced.
        case overlong
        /// A metalink piece the response delivered did not match its digest: it stops there.
        case badPiece
        /// The decoded body outgrew ``DecodedSizeLimit``: ends the download (``failure``).
        case decodedTooLarge
    }

    /// What libcurl knew of the answer when its head was judged.
    package struct Answer: Equatable {
        /// `h1.1`, `h2`…
        package var httpVersion: String?
        /// Where the answer came from after redirects.
        package var effectiveURL: String?
        package var wasRedirected = false
    }

    /// What ``SegmentTransfer`` does with a chunk of body bytes.
    package enum BytesAction: Equatable {
        /// Copy the first `n` bytes (those inside the segment), then say so with
        /// ``took(_:of:badPiece:segmentEnd:unread:)``.
        case take(Int)
        /// Tell libcurl this many were taken: fewer than offered ends the request.
        case answer(Int)
        /// Tell libcurl to pause (`CURL_WRITEFUNC_PAUSE`).
        case pause
    }

    /// When the first body byte came: not yet, in this round (not dated yet), or at an instant.
    package enum FirstByte: Equatable {
        case notYet
        case undated
        case at(Double)
    }

    /// The URL asked.
    package let url: String
    /// The byte range asked for; `nil` for a plain (non-ranged) request.
    package let asked: ByteRange?
    /// Judges the head against the request and the probed file.
    private let validator: ResponseValidator
    /// Whether a body the server encodes unasked is held to ``DecodedSizeLimit`` (a plain request
    /// whose `Accept-Encoding` is our `identity`).
    package var limitsDecodedBytes = false

    package private(set) var phase = Phase.awaitingHead
    /// Why this response must not be used (`refused`, `decodedTooLarge`), and whether that ends
    /// the whole download.
    package private(set) var failure: (error: DownloadError, isFatal: Bool)?
    /// At `cutAtSegmentEnd`: the bytes the server had sent past the end, in the last chunk and
    /// unread on the connection; `nil` when the connection's were not known.
    package private(set) var aheadOfCut: CutWaste.Unread?
    /// Whether the head was judged.
    package private(set) var headJudged = false
    /// The verdict on the head, once judged (see ``finalVerdict(head:proof:)``).
    package private(set) var verdict = ResponseVerdict.accept
    /// What libcurl knew of the answer, once its head was judged.
    package private(set) var answer: Answer?
    /// The response carried another ETag than the probe's for the same file (see ``Source``).
    package private(set) var sawOtherETag = false
    /// The coding of a body held to ``DecodedSizeLimit``, once its head was judged.
    private var limitedCoding: String?
    /// Body bytes taken so far (for speed estimates and progress resets).
    package private(set) var bytesReceived: Int64 = 0
    package private(set) var firstByte = FirstByte.notYet
    /// The start of an error response's body (up to ``errorBodyBytes``): what a store says about
    /// a refusal (`<Code>ExpiredToken</Code>`).
    package private(set) var errorBody: [UInt8] = []
    package static let errorBodyBytes = 2048

    package init(url: String, asked: ByteRange?, remote: RemoteFile, toUserURL: Bool) {
        self.url = url
        self.asked = asked
        validator = ResponseValidator(remote: remote, asked: asked, toUserURL: toUserURL)
    }

    package var isPaused: Bool { phase == .pausedByLimiter }

    /// Whether it stopped at a stolen tail (not a failure).
    package var stoppedAtSegmentEnd: Bool { phase == .cutAtSegmentEnd }

    package var isOverlong: Bool { phase == .overlong }

    /// Whether its body, had the transport ended cleanly, arrived whole: nothing stopped it early.
    package var tookEveryByte: Bool {
        switch phase {
        case .awaitingHead, .receiving, .pausedByLimiter: true
        default: false
        }
    }

    /// The first body byte's instant, once dated.
    package var firstByteAt: Double? {
        if case .at(let instant) = firstByte { instant } else { nil }
    }

    /// Judges `head` once (later calls do nothing); `answer` is what libcurl knew of it. Returns
    /// whether body bytes may be taken.
    @discardableResult
    package mutating func head(_ head: ResponseHead, answer: Answer) -> Bool {
        guard !headJudged else { return failure == nil }
        headJudged = true
        self.answer = answer
        verdict = validator.verdict(head)
        sawOtherETag = validator.carriesOtherETag(head)
        if let error = verdict.error {
            phase = .refused
            failure = (error, !verdict.isRetriable)
            return false
        }
        if limitsDecodedBytes && asked == nil { limitedCoding = head.contentEncoding }
        phase = .receiving
        return true
    }

    /// Whether a response whose head was accepted carries bytes to prove as they land (a 206 of a
    /// ranged request).
    package func provesBody(_ head: ResponseHead) -> Bool {
        verdict == .accept && asked != nil && head.status == 206 && failure == nil
    }

    /// A chunk of body bytes came (the head judged; `status` is its status), with `room` bytes
    /// left in the segment. `limiterAllows` takes the chunk's tokens from the `--max-speed`
    /// bucket (asked only when the bytes would be taken); `encodedBytes` is what the transport
    /// received so far.
    package mutating func bytes(_ chunk: UnsafeRawBufferPointer, status: Int, room: Int64, limiterAllows: () -> Bool,
                        encodedBytes: () -> Int64) -> BytesAction {
        if firstByte == .notYet && phase != .refused { firstByte = .undated }
        switch phase {
        case .receiving, .pausedByLimiter:
            break
        case .refused:
            return .answer(keepErrorBody(chunk, status: status))
        default:
            return .answer(0)
        }
        guard limiterAllows() else {
            phase = .pausedByLimiter
            return .pause
        }
        phase = .receiving
        if let limitedCoding {
            let decoded = bytesReceived + Int64(chunk.count), encoded = encodedBytes()
            if !DecodedSizeLimit.allows(decoded: decoded, encoded: encoded) {
                phase = .decodedTooLarge
                failure = (DecodedSizeLimit.refusal(url: Redaction.url(url), coding: limitedCoding,
                                                    decoded: bytesReceived, encoded: encoded), true)
                return .answer(0)
            }
        }
        return .take(Int(min(Int64(chunk.count), max(0, room))))
    }

    /// The first `usable` of `count` bytes were taken, and `segmentEnd` is the segment's end now;
    /// `badPiece`: a metalink piece among them failed. `unread` reads the bytes waiting unread on
    /// the connection. Returns what libcurl is told was taken.
    package mutating func took(_ usable: Int, of count: Int, badPiece: Bool, segmentEnd: Int64,
                       unread: () -> CutWaste.Unread?) -> Int {
        bytesReceived += Int64(usable)
        if badPiece {
            phase = .badPiece
            return 0
        }
        guard usable == count else {
            // Past the segment's end: either a stolen tail (expected) or an overlong body.
            if let asked, segmentEnd < asked.upper {
                phase = .cutAtSegmentEnd
                aheadOfCut = unread().map {
                    CutWaste.Unread(bytes: Int64(count - usable) + $0.bytes, receiveSpace: $0.receiveSpace)
                }
            } else {
                phase = .overlong
            }
            return 0
        }
        return count
    }

    /// The limiter lets a paused request go on.
    package mutating func resume() {
        if phase == .pausedByLimiter { phase = .receiving }
    }

    /// Dates a first body byte that came in the engine's round at `now`.
    package mutating func dateFirstByte(now: Double) {
        if firstByte == .undated { firstByte = .at(now) }
    }

    /// Keeps the start of an error response's body; returns how many bytes were taken (fewer
    /// than offered ends the request).
    private mutating func keepErrorBody(_ chunk: UnsafeRawBufferPointer, status: Int) -> Int {
        guard status >= 400 else { return 0 }
        let room = Self.errorBodyBytes - errorBody.count
        errorBody.append(contentsOf: chunk.prefix(room))
        return chunk.count <= room ? chunk.count : 0
    }

    /// The kept error body as text.
    package var errorText: String { String(decoding: errorBody, as: UTF8.self) }

    /// The verdict once the response has ended: a too-large decoded body is fatal; a matching or
    /// failing `Content-Digest` (`proof`) decides an accepted head; an expired-token 400 is known
    /// only from its body, which arrives after the head.
    package func finalVerdict(head: ResponseHead, proof: ContentProof?) -> ResponseVerdict {
        if phase == .decodedTooLarge, let failure { return .fatal(failure.error) }
        if verdict == .accept, let proof { return validator.verdict(content: proof) }
        guard headJudged, failure != nil else { return verdict }
        return validator.verdict(head, errorBody: errorText)
    }
}
