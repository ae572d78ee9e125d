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
    private let remote: RemoteFile
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
    /// The server sent more bytes than the range it announced.
    private(set) var overlong = false
    /// Bytes delivered by this request so far (for speed estimates and progress resets).
    private(set) var bytesReceived: Int64 = 0
    let startedAt: Double
    /// Its record against the download's ``LowSpeedRule``.
    var lowSpeed: LowSpeedWindow
    /// When the first body byte arrived (monotonic seconds), if it has.
    private(set) var firstByteAt: Double?
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
    /// The response carried another ETag than the probe's for the same file (see ``Source``).
    private(set) var sawOtherETag = false
    /// The start of an error response's body (up to ``errorBodyBytes``): what a store says
    /// about a refusal (`<Code>ExpiredToken</Code>`).
    private(set) var errorBody: [UInt8] = []
    static let errorBodyBytes = 2048

    init(id: Int, segment: EngineSegment, requested: ByteRange?, url: String, writer: WriteQueue, pool: BufferPool,
         remote: RemoteFile, now: Double) {
        self.id = id
        self.url = url
        lowSpeed = LowSpeedWindow(now: now)
        self.segment = segment
        self.requested = requested
        self.writer = writer
        self.pool = pool
        self.remote = remote
        self.buffer = pool.take()
        self.easy = CurlEasy()
        self.startedAt = now
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
            if failure == nil { firstByteAt = MonotonicTime.now() }
        }
        if failure != nil { return keepErrorBody(bytes) }
        if let limiter, !limiter.pointee.take(bytes.count) {
            isPaused = true
            return CCURL_WRITEFUNC_PAUSE
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
        bytesReceived += Int64(usable)
        guard usable == bytes.count else {
            // Past the segment's end: either a stolen tail (expected) or an overlong body.
            if let requested, segment.state.range.upper < requested.upper {
                stoppedAtSegmentEnd = true
            } else {
                overlong = true
            }
            return 0
        }
        return bytes.count
    }

    /// The kept error body as text.
    var errorText: String { String(decoding: errorBody, as: UTF8.self) }

    /// What a store's XML error body says, e.g. `AccessDenied: Request has expired`; `nil`
    /// without one.
    var errorSummary: String? {
        let text = errorText
        func element(_ name: String) -> String? {
            guard let open = text.firstRange(of: "<\(name)>"),
                  let close = text[open.upperBound...].firstRange(of: "</\(name)>") else { return nil }
            return String(text[open.upperBound..<close.lowerBound].prefix(200))
        }
        guard let code = element("Code") else { return nil }
        return element("Message").map { "\(code): \($0)" } ?? code
    }

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
        if let verdict = verdict() { failure = verdict }
    }

    private func verdict() -> (error: DownloadError, isFatal: Bool)? {
        let url = remote.url
        if let malformed = head.malformation(url: url) { return (malformed, true) }
        if let error = head.statusError(url: url, range: requested) {
            if head.status == 416 {
                return (DownloadError(.remoteChanged, "\(url): range \(requested?.httpRangeSpec ?? "") not satisfiable; the file on the server changed (was \(remote.size ?? 0) bytes)."), true)
            }
            return (error, !error.isTransient)
        }
        if let changed = changedVersion() { return (changed, true) }
        guard let requested else { return nil }
        if sawOtherETag && head.status == 200 {
            // Another origin did not know the ETag sent in If-Range and sent the whole file: the
            // retry sends the Last-Modified date instead (see Source).
            return (DownloadError(.protocolViolation, "\(url): another origin answered with ETag \(head["etag"] ?? "") and the whole file; asking again with If-Range by date"), false)
        }
        if let ignored = head.ignoredRangeError(url: url) { return (ignored, true) }
        if let coding = head.contentEncoding {
            // Ranges of an encoded body are not ranges of the file: fall back to one decoded stream.
            return (DownloadError(.rangesNotHonoured, "\(url): server sent Content-Encoding \(coding) for a range; ranges of an encoded body are not ranges of the file"), true)
        }
        if let mismatch = head.contentRangeError(asked: requested, size: remote.size, url: url) {
            if let total = head.contentRange?.completeLength, total != remote.size {
                return (DownloadError(.remoteChanged, "\(url): file size changed on the server from \(remote.size ?? 0) to \(total) bytes."), true)
            }
            return (mismatch, false)
        }
        return nil
    }

    /// A response whose validators contradict the probe's means the file changed under us.
    private func changedVersion() -> DownloadError? {
        let url = remote.url
        switch Source.identity(etag: head["etag"], lastModified: head["last-modified"], of: remote) {
        case .same:
            break
        case .otherETag:
            sawOtherETag = true
        case .changed:
            if let expected = remote.etag, let actual = head["etag"], expected != actual {
                return DownloadError(.remoteChanged, "\(url): file changed on the server (ETag \(expected) became \(actual), Last-Modified \(remote.lastModified ?? "none") became \(head["last-modified"] ?? "none"))")
            }
            return DownloadError(.remoteChanged, "\(url): file changed on the server (Last-Modified \(remote.lastModified ?? "none") became \(head["last-modified"] ?? "none"))")
        }
        if requested == nil, head.status == 200, let size = remote.size, let length = head.contentLength,
           !head.hasContentEncoding, length != size {
            return DownloadError(.remoteChanged, "\(url): file size changed on the server from \(size) to \(length) bytes.")
        }
        return nil
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
