import CCurl

/// One in-flight request for (part of) a segment: its easy handle, the response head, and a
/// small write-coalescing buffer between libcurl's 16 KiB callbacks and `pwrite`.
///
/// Lives on the engine thread only. libcurl reaches it through the userdata pointer.
final class SegmentTransfer {
    let segment: EngineSegment
    let easy: CurlEasy
    /// The byte range asked for; `nil` for a plain (non-ranged) request.
    let requested: ByteRange?
    private let file: PartialFile
    private let remote: RemoteFile
    private let buffer: UnsafeMutableRawBufferPointer
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
    /// Smoothed receive speed in bytes per second; negative until first measured.
    var bytesPerSecond: Double = -1
    /// When this transfer first fell far behind its siblings, if it still is.
    var slowSince: Double?
    private var speedSample: (time: Double, bytes: Int64)

    init(segment: EngineSegment, requested: ByteRange?, file: PartialFile, remote: RemoteFile,
         buffer: UnsafeMutableRawBufferPointer, now: Double) {
        self.segment = segment
        self.requested = requested
        self.file = file
        self.remote = remote
        self.buffer = buffer
        self.easy = CurlEasy()
        self.startedAt = now
        self.speedSample = (now, 0)
    }

    /// Folds the bytes since the last sample into ``bytesPerSecond`` (at most once a second).
    func sampleSpeed(now: Double) {
        let elapsed = now - speedSample.time
        guard elapsed >= 1 else { return }
        let instant = Double(bytesReceived - speedSample.bytes) / elapsed
        bytesPerSecond = bytesPerSecond < 0 ? instant : (bytesPerSecond + instant) / 2
        speedSample = (now, bytesReceived)
    }

    /// The buffer, for the engine to recycle once this transfer is done.
    var recyclableBuffer: UnsafeMutableRawBufferPointer { buffer }

    /// Absolute file offset the next received byte belongs at.
    private var nextOffset: Int64 { segment.state.range.lower + segment.state.written + Int64(buffered) }

    /// The engine's `--max-speed` bucket, when there is one.
    var limiter: UnsafeMutablePointer<RateLimiter>?
    /// Paused by the rate limiter; the engine resumes it.
    var isPaused = false

    /// Handles one chunk of body bytes from libcurl; returns how many were taken (fewer aborts,
    /// `CURL_WRITEFUNC_PAUSE` pauses).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if !validated {
            validateHead()
            guard failure == nil else { return 0 }
        }
        if let limiter, !limiter.pointee.take(bytes.count) {
            isPaused = true
            return CCURL_WRITEFUNC_PAUSE
        }
        let room = max(0, segment.state.range.upper - nextOffset)
        let usable = Int(min(Int64(bytes.count), room))
        var taken = 0
        while taken < usable {
            let chunk = min(usable - taken, buffer.count - buffered)
            (buffer.baseAddress! + buffered).copyMemory(from: bytes.baseAddress! + taken, byteCount: chunk)
            buffered += chunk
            taken += chunk
            if buffered == buffer.count {
                guard flush() else { return 0 }
            }
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

    /// Writes buffered bytes to the partial file; records a fatal failure and returns false on error.
    @discardableResult
    func flush() -> Bool {
        guard buffered > 0 else { return true }
        let offset = segment.state.range.lower + segment.state.written
        do {
            try file.write(UnsafeRawBufferPointer(rebasing: buffer[0..<buffered]), at: offset)
        } catch {
            failure = (error.downloadError, true)
            return false
        }
        segment.state.written += Int64(buffered)
        buffered = 0
        return true
    }

    /// Checks the response head against what was asked, once, before any byte is written.
    /// Also called at completion for responses that carried no body.
    func validateHead() {
        guard !validated else { return }
        validated = true
        if let verdict = verdict() { failure = verdict }
    }

    private func verdict() -> (error: DownloadError, isFatal: Bool)? {
        let url = remote.finalURL
        let status = head.status
        if !(200..<300).contains(status) {
            var error = DownloadError(.httpStatus(status), "\(url): server answered HTTP \(status)\(Prober.reason(status))"
                                      + (requested.map { " for range \($0.httpRangeSpec)" } ?? ""))
            error.retryAfterSeconds = RetryPolicy.retryAfterSeconds(head["retry-after"])
            if status == 416 {
                return (DownloadError(.remoteChanged, "\(url): range \(requested?.httpRangeSpec ?? "") not satisfiable; the file on the server changed (was \(remote.size ?? 0) bytes). Rerun to start over."), true)
            }
            return (error, !error.isTransient)
        }
        if let changed = changedVersion() { return (changed, true) }
        guard let requested else { return nil }
        if status != 206 {
            return (DownloadError(.rangesNotHonoured, "\(url): server ignored the Range header (HTTP \(status))"), true)
        }
        if head.hasContentEncoding {
            return (DownloadError(.protocolViolation, "\(url): server sent Content-Encoding \(head["content-encoding"] ?? "") for a range; ranges of an encoded body are not ranges of the file"), true)
        }
        guard let contentRange = head.contentRange, contentRange.range == requested,
              contentRange.completeLength == remote.size else {
            if let contentRange = head.contentRange, let total = contentRange.completeLength, total != remote.size {
                return (DownloadError(.remoteChanged, "\(url): file size changed on the server from \(remote.size ?? 0) to \(total) bytes. Rerun to start over."), true)
            }
            return (DownloadError(.protocolViolation, "\(url): asked for bytes \(requested.httpRangeSpec), server sent Content-Range '\(head["content-range"] ?? "none")'"), false)
        }
        return nil
    }

    /// A response whose validators contradict the probe's means the file changed under us.
    private func changedVersion() -> DownloadError? {
        let url = remote.finalURL
        if let expected = remote.etag, let actual = head["etag"], expected != actual {
            return DownloadError(.remoteChanged, "\(url): file changed on the server (ETag \(expected) became \(actual)). Rerun to start over.")
        }
        if remote.etag == nil, let expected = remote.lastModified, let actual = head["last-modified"], expected != actual {
            return DownloadError(.remoteChanged, "\(url): file changed on the server (Last-Modified \(expected) became \(actual)). Rerun to start over.")
        }
        if requested == nil, head.status == 200, let size = remote.size, let length = head.contentLength,
           !head.hasContentEncoding, length != size {
            return DownloadError(.remoteChanged, "\(url): file size changed on the server from \(size) to \(length) bytes. Rerun to start over.")
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
    transfer.head.consume(line: String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self))
    return size * count
}
