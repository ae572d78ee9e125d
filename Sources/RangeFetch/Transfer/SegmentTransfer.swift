import CCurl

/// One in-flight request for (part of) a segment: its easy handle, the response head, and a
/// write-coalescing buffer between libcurl's 16 KiB callbacks and `pwrite`. Full buffers go to
/// the ``WriteQueue``; the segment counts them as `queued` until the write completes.
///
/// Lives on the engine thread only. libcurl reaches it through the userdata pointer.
final class SegmentTransfer {
    let segment: EngineSegment
    let easy: CurlEasy
    /// The byte range asked for; `nil` for a plain (non-ranged) request.
    let requested: ByteRange?
    private let writer: WriteQueue
    private let pool: BufferPool
    /// Judges the response head against the request and the probed file.
    private let validator: ResponseValidator
    /// The verdict on the response head, once checked (see ``finalVerdict``).
    private(set) var verdict = ResponseVerdict.accept
    private var buffer: UnsafeMutableRawBufferPointer
    /// Where the buffered bytes begin in ``buffer``: the next file offset modulo the file's
    /// direct-write alignment, so every aligned file offset sits at an aligned address.
    private var bufferStart = 0
    private(set) var buffered = 0
    var head = ResponseHead()
    private(set) var validated = false
    /// Set when this response must not be used; `isFatal` stops the whole download.
    private(set) var failure: (error: DownloadError, isFatal: Bool)?
    /// The segment's end moved below what was asked (work stealing) and has been reached.
    private(set) var stoppedAtSegmentEnd = false
    /// Bytes the server had sent past the segment's end when the request stopped there: those
    /// of the last chunk and those waiting unread on its connection (``unreadOnConnection``);
    /// `nil` when the connection's were not known.
    private(set) var aheadOfSegmentEnd: CutWaste.Unread?
    /// Reads the bytes waiting unread on this request's connection (set by the engine).
    var unreadOnConnection: (() -> CutWaste.Unread?)?
    /// The server sent more bytes than the range it announced.
    private(set) var overlong = false
    /// Whether a body the server encodes unasked is held to ``DecodedSizeLimit`` (a plain request
    /// whose `Accept-Encoding` is our `identity`; set by ``configure(_:ifRange:connectionLifetime:limiter:)``).
    var limitsDecodedBytes = false
    /// The coding of a body held to ``DecodedSizeLimit``, once its head was checked.
    private var limitedCoding: String?
    /// Set when the decoded body outgrew ``DecodedSizeLimit``: ends the download.
    private(set) var decodedTooLarge: DownloadError?
    /// Bytes delivered by this request so far (for speed estimates and progress resets).
    private(set) var bytesReceived: Int64 = 0
    let startedAt: Double
    /// Its record against the download's ``LowSpeedRule``.
    var lowSpeed: LowSpeedWindow
    /// When the first body byte arrived (monotonic seconds), if it has: the instant of the
    /// engine's round it came in (``dateFirstByte(now:)``); the transfer reads no clock.
    private(set) var firstByteAt: Double?
    /// The first body byte came, not dated yet.
    private var firstByteUndated = false
    /// Unique per request, for the scheduler's speed records.
    let id: Int
    /// The response's HTTP version (`h1.1`, `h2`), once its head was checked.
    private(set) var httpVersion: String?
    /// The URL this request asked for.
    let url: String
    /// Which of the download's sources it asked.
    var sourceID = SourceID.main
    /// Where the answer came from after redirects, once its head was checked.
    private(set) var effectiveURL: String?
    /// Its source's re-resolutions when it started (``Source/resolutions``).
    var resolutionRound = 0
    /// The answer came from where the request was redirected to, once its head was checked.
    private(set) var wasRedirected = false
    /// The response carried another ETag than the probe's for the same file (see ``Source``).
    private(set) var sawOtherETag = false
    /// The start of an error response's body (up to ``errorBodyBytes``): what a store says
    /// about a refusal (`<Code>ExpiredToken</Code>`).
    private(set) var errorBody: [UInt8] = []
    static let errorBodyBytes = 2048
    /// Hashes the content of a 206 that carries a `Content-Digest` (from its first byte).
    private(set) var contentCheck: ContentDigestCheck?
    /// What the `Content-Digest` proved, once the response has ended (``settleProof(result:)``);
    /// `nil` while it runs or when it carried none.
    private(set) var proof: ContentProof?
    /// The metalink's piece digests, when the download has them (set before the first byte).
    var pieces: PieceDigests?
    /// The file's size, for the last piece's end.
    private let fileSize: Int64?
    /// Hashes the pieces a 206 delivers whole, when ``pieces`` are known.
    private(set) var pieceCheck: PieceHasher?

    init(id: Int, segment: EngineSegment, requested: ByteRange?, url: String, writer: WriteQueue, pool: BufferPool,
         remote: RemoteFile, toUserURL: Bool, now: Double) throws(DownloadError) {
        self.easy = try CurlEasy()
        self.id = id
        self.url = url
        lowSpeed = LowSpeedWindow(now: now)
        self.segment = segment
        self.requested = requested
        self.writer = writer
        self.pool = pool
        self.validator = ResponseValidator(remote: remote, asked: requested, toUserURL: toUserURL)
        self.buffer = pool.take()
        self.startedAt = now
        fileSize = remote.size
        alignBuffer()
    }

    private func alignBuffer() {
        bufferStart = Int(nextOffset % Int64(PartialFile.directAlignment))
    }

    /// The buffer, for the engine to recycle once this transfer is done.
    var recyclableBuffer: UnsafeMutableRawBufferPointer { buffer }

    /// Absolute file offset the next received byte belongs at.
    private var nextOffset: Int64 {
        segment.state.range.lower + segment.state.written + segment.queued + Int64(buffered)
    }

    /// The engine's `--max-speed` bucket, when there is one.
    var limiter: UnsafeMutablePointer<RateLimiter>?
    /// Paused by the rate limiter; the engine resumes it.
    var isPaused = false

    /// Handles one chunk of body bytes from libcurl; returns how many were taken (fewer aborts,
    /// `CURL_WRITEFUNC_PAUSE` pauses).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if !validated {
            validateHead()
            if failure == nil { firstByteUndated = true }
        }
        if failure != nil { return keepErrorBody(bytes) }
        if let limiter, !limiter.pointee.take(bytes.count) {
            isPaused = true
            return CCURL_WRITEFUNC_PAUSE
        }
        if let limitedCoding {
            let decoded = bytesReceived + Int64(bytes.count), encoded = easy.receivedBodyBytes
            if !DecodedSizeLimit.allows(decoded: decoded, encoded: encoded) {
                let refusal = DecodedSizeLimit.refusal(url: Redaction.url(url), coding: limitedCoding, decoded: bytesReceived, encoded: encoded)
                decodedTooLarge = refusal
                failure = (refusal, true)
                return 0
            }
        }
        let room = max(0, segment.state.range.upper - nextOffset)
        let usable = Int(min(Int64(bytes.count), room))
        var taken = 0
        while taken < usable {
            let chunk = min(usable - taken, buffer.count - bufferStart - buffered)
            (buffer.baseAddress! + bufferStart + buffered).copyMemory(from: bytes.baseAddress! + taken, byteCount: chunk)
            buffered += chunk
            taken += chunk
            if bufferStart + buffered == buffer.count { flush() }
        }
        contentCheck?.update(UnsafeRawBufferPointer(rebasing: bytes[0..<usable]))
        bytesReceived += Int64(usable)
        if let pieceCheck {
            for piece in pieceCheck.update(UnsafeRawBufferPointer(rebasing: bytes[0..<usable]), segmentEnd: segment.state.range.upper)
            where piece.matched {
                segment.provenPieces.append(piece)
            }
            // A bad piece stops the response: its bytes from that piece on are rejected (``RangeProof``).
            if pieceCheck.mismatch != nil { return 0 }
        }
        guard usable == bytes.count else {
            // Past the segment's end: either a stolen tail (expected) or an overlong body.
            if let requested, segment.state.range.upper < requested.upper {
                stoppedAtSegmentEnd = true
                aheadOfSegmentEnd = unreadOnConnection?().map { unread in
                    CutWaste.Unread(bytes: Int64(bytes.count - usable) + unread.bytes, receiveSpace: unread.receiveSpace)
                }
            } else {
                overlong = true
            }
            return 0
        }
        return bytes.count
    }

    /// Dates a first body byte that came in the engine's round at `now` (monotonic seconds).
    func dateFirstByte(now: Double) {
        guard firstByteUndated else { return }
        firstByteUndated = false
        firstByteAt = now
    }

    /// The kept error body as text.
    var errorText: String { String(decoding: errorBody, as: UTF8.self) }

    /// What a store's XML error body says, e.g. `AccessDenied: Request has expired`; `nil`
    /// without one.
    var errorSummary: String? { StoreError(body: errorText)?.summary }

    /// Keeps the start of an error response's body; returns how many bytes were taken (fewer
    /// than offered ends the transfer).
    private func keepErrorBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard head.status >= 400 else { return 0 }
        let room = Self.errorBodyBytes - errorBody.count
        errorBody.append(contentsOf: bytes.prefix(room))
        return bytes.count <= room ? bytes.count : 0
    }

    /// Hands the buffered bytes to the write queue and continues in a fresh buffer.
    func flush() {
        guard buffered > 0 else { return }
        let offset = segment.state.range.lower + segment.state.written + segment.queued
        // One CRC pass over the buffer while it is in hand (the journal's block CRCs).
        segment.hasher?.add(UnsafeRawBufferPointer(rebasing: buffer[bufferStart..<bufferStart + buffered]), at: offset,
                            range: segment.state.range)
        writer.submit(buffer, start: bufferStart, count: buffered, at: offset, lane: segment.id, token: segment.id)
        segment.queued += Int64(buffered)
        buffered = 0
        buffer = pool.take()
        alignBuffer()
    }

    /// Checks the response head against what was asked, once, before any byte is written.
    /// Also called at completion for responses that carried no body.
    func validateHead() {
        guard !validated else { return }
        validated = true
        httpVersion = easy.httpVersion
        effectiveURL = easy.effectiveURL
        wasRedirected = easy.redirectCount > 0
        verdict = validator.verdict(head)
        sawOtherETag = validator.carriesOtherETag(head)
        if let error = verdict.error { failure = (error, !verdict.isRetriable) }
        if limitsDecodedBytes && requested == nil { limitedCoding = head.contentEncoding }
        guard verdict == .accept, requested != nil, head.status == 206 else { return }
        contentCheck = ContentDigestCheck(head: head, start: nextOffset)
        pieceCheck = PieceHasher(pieces: pieces, size: fileSize, start: nextOffset)
    }

    /// Where the segment's bytes stop being vouched for while this response runs: its first
    /// byte's offset when it carries a `Content-Digest` not checked yet, else `nil`. A journal
    /// record must not claim bytes past it (a mismatch would reject them).
    var unprovenFrom: Int64? { proof == nil ? contentCheck?.start : nil }

    /// Whether its range may be cut short for another request to take the tail: a response
    /// carrying a `Content-Digest` is proven only whole, so cutting its tail off would leave its
    /// bytes unproven; one whose answer has not come yet only when its source is known to answer
    /// without (``DigestSources``).
    func mayBeCut(_ digests: DigestSources) -> Bool {
        unprovenFrom == nil && (validated || digests.mayCutUnanswered(sourceID))
    }

    /// Settles what the response's `Content-Digest` proved, once libcurl ended it with `result`.
    /// Only a clean end with every announced byte taken can be checked. Call once, at the end.
    func settleProof(result: CURLcode) {
        guard let contentCheck, proof == nil else { return }
        let whole = result == CURLE_OK && failure == nil && !overlong && !stoppedAtSegmentEnd
        proof = contentCheck.outcome(deliveredWhole: whole)
    }

    /// The verdict once the response has ended: an expired-token 400 is known only from its
    /// body, which arrives after the head.
    /// A response whose content did not match its `Content-Digest` is rejected here too.
    var finalVerdict: ResponseVerdict {
        if let decodedTooLarge { return .fatal(decodedTooLarge) }
        if verdict == .accept, let proof { return validator.verdict(content: proof) }
        guard validated, failure != nil else { return verdict }
        return validator.verdict(head, errorBody: errorText)
    }
}

/// libcurl's write callback for segment transfers: finds the transfer through userdata.
func segmentWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let transfer = Unmanaged<SegmentTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.receive(UnsafeRawBufferPointer(start: data, count: size * count))
}

/// libcurl's header callback for segment transfers.
func segmentHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let transfer = Unmanaged<SegmentTransfer>.fromOpaque(userdata).takeUnretainedValue()
    // Returning 0 aborts the transfer: a head past ResponseLimits is not read any further.
    return transfer.head.consume(bytes: UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}
