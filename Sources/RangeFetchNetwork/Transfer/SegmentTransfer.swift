import RangeFetchBase
import CCurl

/// One in-flight request for (part of) a segment: its easy handle, the response head, and a
/// write-coalescing buffer between libcurl's 16 KiB callbacks and `pwrite`. Full buffers go to
/// the ``WriteQueue``; the segment counts them as `queued` until the write completes.
///
/// Lives on the engine thread only. libcurl reaches it through the userdata pointer.
package final class SegmentTransfer {
    package let segment: EngineSegment
    package let easy: CurlEasy
    private let writer: WriteQueue
    private let pool: BufferPool
    // The three values the write callback changes on every chunk are reached without a dynamic
    // exclusivity check: this object lives on the engine thread alone, and none of them is
    // handed out by reference.
    @exclusivity(unchecked) private var gather: GatherBuffer
    package var head = ResponseHead()
    /// The request's life: its head judged, its bytes taken, why it stopped (the decisions).
    @exclusivity(unchecked) package private(set) var state: RequestState
    /// What its body is proven by as it lands.
    @exclusivity(unchecked) package private(set) var proofs: BodyProofs
    /// Unique per request, for the scheduler's speed records.
    package let id: Int
    package let startedAt: Double
    /// Which of the download's sources it asked.
    package var sourceID = SourceID.main
    /// Its source's re-resolutions when it started (``Source/resolutions``).
    package var resolutionRound = 0
    /// Its record against the download's ``LowSpeedRule``.
    package var lowSpeed: LowSpeedWindow
    /// The engine's `--max-speed` bucket, when there is one.
    package var limiter: UnsafeMutablePointer<RateLimiter>?
    /// Reads the bytes waiting unread on this request's connection (set by the engine).
    package var unreadOnConnection: (() -> CutWaste.Unread?)?

    package init(id: Int, segment: EngineSegment, requested: ByteRange?, url: String, writer: WriteQueue, pool: BufferPool,
         remote: RemoteFile, toUserURL: Bool, now: Double) throws(DownloadError) {
        self.easy = try CurlEasy()
        self.id = id
        lowSpeed = LowSpeedWindow(now: now)
        self.segment = segment
        self.writer = writer
        self.pool = pool
        state = RequestState(url: url, asked: requested, remote: remote, toUserURL: toUserURL)
        proofs = BodyProofs(fileSize: remote.size)
        self.startedAt = now
        gather = GatherBuffer(pool.take(), offset: segment.state.range.lower + segment.state.written + segment.queued)
    }

    /// The URL this request asked for.
    package var url: String { state.url }
    /// The byte range asked for; `nil` for a plain (non-ranged) request.
    package var requested: ByteRange? { state.asked }
    /// Bytes delivered by this request so far.
    package var bytesReceived: Int64 { state.bytesReceived }
    /// When the first body byte arrived (monotonic seconds), once dated (``dateFirstByte(now:)``).
    package var firstByteAt: Double? { state.firstByteAt }
    /// Why this response must not be used; `isFatal` stops the whole download.
    package var failure: (error: DownloadError, isFatal: Bool)? { state.failure }
    package var stoppedAtSegmentEnd: Bool { state.stoppedAtSegmentEnd }
    package var isPaused: Bool { state.isPaused }
    /// The response's HTTP version (`h1.1`, `h2`), once its head was checked.
    package var httpVersion: String? { state.answer?.httpVersion }
    /// Where the answer came from after redirects, once its head was checked.
    package var effectiveURL: String? { state.answer?.effectiveURL }
    /// The answer came from where the request was redirected to, once its head was checked.
    package var wasRedirected: Bool { state.answer?.wasRedirected ?? false }
    /// The metalink's piece digests, when the download has them (set before the first byte).
    package var pieces: PieceDigests? {
        get { proofs.pieces }
        set { proofs.pieces = newValue }
    }

    /// Bytes gathered and not yet handed to the write queue.
    package var buffered: Int { gather.count }

    /// The buffer, for the engine to recycle once this transfer is done.
    package var recyclableBuffer: UnsafeMutableRawBufferPointer { gather.memory }

    /// Absolute file offset the next received byte belongs at.
    private var nextOffset: Int64 {
        segment.state.range.lower + segment.state.written + segment.queued + Int64(gather.count)
    }

    /// Handles one chunk of body bytes from libcurl; returns how many were taken (fewer aborts,
    /// `CURL_WRITEFUNC_PAUSE` pauses).
    package func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if !state.headJudged { validateHead() }
        let action = state.bytes(bytes, status: head.status, room: segment.state.range.upper - nextOffset,
                                 limiterAllows: { limiter.map { $0.pointee.take(bytes.count) } ?? true },
                                 encodedBytes: { easy.receivedBodyBytes })
        let usable: Int
        switch action {
        case .answer(let count): return count
        case .pause: return CCURL_WRITEFUNC_PAUSE
        case .take(let count): usable = count
        }
        let kept = UnsafeRawBufferPointer(rebasing: bytes[0..<usable])
        var taken = 0
        while taken < usable {
            taken += gather.append(UnsafeRawBufferPointer(rebasing: kept[taken...]))
            if gather.isFull { flush() }
        }
        let (proven, badPiece) = proofs.update(kept, segmentEnd: segment.state.range.upper)
        if !proven.isEmpty { segment.provenPieces += proven }
        return state.took(usable, of: bytes.count, badPiece: badPiece, segmentEnd: segment.state.range.upper,
                          unread: { unreadOnConnection?() })
    }

    /// Dates a first body byte that came in the engine's round at `now` (monotonic seconds).
    package func dateFirstByte(now: Double) {
        state.dateFirstByte(now: now)
    }

    /// Whether a body the server encodes unasked is held to ``DecodedSizeLimit``
    /// (``RequestState/limitsDecodedBytes``).
    package func holdsDecodedBytesToTheLimit(_ holds: Bool) {
        state.limitsDecodedBytes = holds
    }

    /// The limiter lets a paused request go on.
    package func resumeFromLimiter() {
        state.resume()
        easy.resume()
    }

    /// The kept error body as text.
    package var errorText: String { state.errorText }

    /// What a store's XML error body says, e.g. `AccessDenied: Request has expired`; `nil`
    /// without one.
    package var errorSummary: String? { StoreError(body: errorText)?.summary }

    /// Hands the buffered bytes to the write queue and continues in a fresh buffer.
    package func flush() {
        guard gather.count > 0 else { return }
        let offset = segment.state.range.lower + segment.state.written + segment.queued
        let gathered = UnsafeRawBufferPointer(rebasing: gather.memory[gather.start..<gather.start + gather.count])
        // One CRC pass over the buffer while it is in hand (the journal's block CRCs).
        segment.hasher?.add(gathered, at: offset, range: segment.state.range)
        writer.submit(gather.memory, start: gather.start, count: gather.count, at: offset, lane: segment.id, token: segment.id)
        segment.queued += Int64(gather.count)
        gather = GatherBuffer(pool.take(), offset: offset + Int64(gather.count))
    }

    /// Checks the response head against what was asked, once, before any byte is written.
    /// Also called at completion for responses that carried no body.
    package func validateHead() {
        guard !state.headJudged else { return }
        let answer = RequestState.Answer(httpVersion: easy.httpVersion, effectiveURL: easy.effectiveURL,
                                         wasRedirected: easy.redirectCount > 0)
        guard state.head(head, answer: answer), state.provesBody(head) else { return }
        proofs.begin(head: head, at: nextOffset)
    }

    /// Where the segment's bytes stop being vouched for while this response runs
    /// (``BodyProofs/unprovenFrom``).
    package var unprovenFrom: Int64? { proofs.unprovenFrom }

    /// Where the segment's bytes stop being vouched for to a journal record or a digest following
    /// the written prefix (``BodyProofs/unvouchedFrom``): also before a metalink piece still hashing.
    package var unvouchedFrom: Int64? { proofs.unvouchedFrom }

    /// Whether its range may be cut short for another request to take the tail: a response
    /// carrying a `Content-Digest` is proven only whole, so cutting its tail off would leave its
    /// bytes unproven; one whose answer has not come yet only when its source is known to answer
    /// without (``DigestSources``).
    package func mayBeCut(_ digests: DigestSources) -> Bool {
        unprovenFrom == nil && (state.headJudged || digests.mayCutUnanswered(sourceID))
    }

    /// Settles what the response's `Content-Digest` proved, once libcurl ended it with `result`.
    /// Only a clean end with every announced byte taken can be checked. Call once, at the end.
    package func settleProof(result: CURLcode) {
        proofs.settle(deliveredWhole: result == CURLE_OK && state.tookEveryByte)
    }

    /// The verdict once the response has ended (``RequestState/finalVerdict(head:proof:)``).
    package var finalVerdict: ResponseVerdict { state.finalVerdict(head: head, proof: proofs.proof) }
}

/// libcurl's write callback for segment transfers: finds the transfer through userdata.
package func segmentWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let transfer = Unmanaged<SegmentTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.receive(UnsafeRawBufferPointer(start: data, count: size * count))
}

/// libcurl's header callback for segment transfers.
package func segmentHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let transfer = Unmanaged<SegmentTransfer>.fromOpaque(userdata).takeUnretainedValue()
    // Returning 0 aborts the transfer: a head past ResponseLimits is not read any further.
    return transfer.head.consume(bytes: UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}
