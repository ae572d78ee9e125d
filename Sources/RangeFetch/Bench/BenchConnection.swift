import RangeFetchBase
import RangeFetchNetwork
import CCurl

/// One measuring connection of a bench run: its slice of the file, the request for what is left
/// of it, and what it measured. Bytes are discarded or coalesced and written with `pwrite`.
///
/// Lives on the measuring thread only; libcurl reaches it through the userdata pointer.
final class BenchConnection {
    let easy: CurlEasy
    /// The bytes this connection fetches; `nil` for a plain stream (no ranges).
    let slice: ByteRange?
    /// Bytes a plain stream may take before it stops (the budget), `nil`: until the deadline.
    let streamLimit: Int64?
    let remoteSize: Int64?
    let url: String
    private let file: PartialFile?
    private var buffer: UnsafeMutableRawBufferPointer?
    private var buffered = 0

    private(set) var head = ResponseHead()
    private var validated = false
    /// Why this connection's response cannot be used (fatal for the run).
    private(set) var failure: DownloadError?
    /// Received body bytes, all requests together.
    private(set) var received: Int64 = 0
    /// Bytes that reached the sink (received for null; written for disk).
    private(set) var written: Int64 = 0
    /// A plain stream reached ``streamLimit`` (the request was stopped on purpose).
    private(set) var reachedLimit = false
    /// The first request's connection setup and first response byte, seconds after its start.
    private(set) var connectSeconds: Double?
    private(set) var timeToFirstByteSeconds: Double?
    let startedAt: Double
    var finishedAt: Double?
    var retries = 0
    /// Requests sent, and those the server refused with 429 or 503 (pushback: sent again after a
    /// pause, not counted as retries).
    var requests = 0
    var pushbacks = 0
    var pushbackStatus: Int?

    /// Bytes coalesced before each `pwrite` (`--sink disk`), as the download path does.
    static let diskBufferBytes = 1 << 20

    /// - Throws: when libcurl cannot allocate a request handle.
    init(url: String, slice: ByteRange?, streamLimit: Int64?, remoteSize: Int64?, file: PartialFile?,
         now: Double) throws(DownloadError) {
        easy = try CurlEasy()
        self.url = url
        self.slice = slice
        self.streamLimit = streamLimit
        self.remoteSize = remoteSize
        self.file = file
        self.startedAt = now
        if file != nil { buffer = .allocate(byteCount: Self.diskBufferBytes, alignment: PartialFile.directAlignment) }
    }

    deinit { buffer?.deallocate() }

    /// What is left of the slice (`nil` for a plain stream).
    var remaining: ByteRange? { slice.map { $0.suffix(from: $0.lower + received) } }
    var isComplete: Bool { reachedLimit || (remaining.map(\.isEmpty) ?? false) }

    /// Points the easy handle at what is left, with a fresh response head.
    func prepareRequest(options: RequestOptions) {
        let ranged = remaining == nil ? [] : ["Accept-Encoding: identity"]
        options.configure(easy, url: url, extraHeaders: ranged)
        if let remaining { easy.set(CURLOPT_RANGE, remaining.httpRangeSpec) }
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        easy.setWriteCallback(benchWriteCallback, userdata: userdata)
        easy.setHeaderCallback(benchHeaderCallback, userdata: userdata)
        head = ResponseHead()
        validated = false
    }

    func consumeHeader(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if timeToFirstByteSeconds == nil {
            timeToFirstByteSeconds = MonotonicTime.now() - startedAt
            var microseconds: curl_off_t = 0
            ccurl_easy_getinfo_offset(easy.handle, CURLINFO_CONNECT_TIME_T, &microseconds)
            connectSeconds = Double(microseconds) / 1e6
        }
        return head.consume(bytes: bytes)
    }

    /// The last response refused the request for now (HTTP 429 or 503): its body is no part of
    /// the file.
    var isPushback: Bool { head.status == 429 || head.status == 503 }

    /// The response now arriving is the file's bytes (not a refusal, not failed).
    var isStreaming: Bool { validated && failure == nil && !isPushback }

    /// The server's `Retry-After` in seconds, when it is a number.
    var retryAfterSeconds: Double? { head["retry-after"].flatMap { Double(String($0.trimmingASCIIWhitespace())) } }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if isPushback { return bytes.count }
        if !validated {
            validated = true
            failure = verdict()
            if failure != nil { return 0 }
        }
        var usable = bytes.count
        if let remaining { usable = Int(min(Int64(usable), remaining.count)) }
        if let streamLimit { usable = Int(min(Int64(usable), max(0, streamLimit - received))) }
        if file != nil { store(UnsafeRawBufferPointer(rebasing: bytes[0..<usable])) } else { written += Int64(usable) }
        received += Int64(usable)
        guard usable == bytes.count else {
            if streamLimit != nil && remaining == nil {
                reachedLimit = true
            } else {
                failure = DownloadError(.protocolViolation, "\(url): server sent more than the \(slice?.count ?? 0) bytes asked for", url: url)
            }
            return 0
        }
        return bytes.count
    }

    private func store(_ bytes: UnsafeRawBufferPointer) {
        guard let buffer, failure == nil else { return }
        var taken = 0
        while taken < bytes.count {
            let chunk = min(bytes.count - taken, buffer.count - buffered)
            (buffer.baseAddress! + buffered).copyMemory(from: bytes.baseAddress! + taken, byteCount: chunk)
            buffered += chunk
            taken += chunk
            if buffered == buffer.count { flush() }
        }
    }

    /// Writes the coalesced bytes at their place in the file.
    func flush() {
        guard let file, let buffer, buffered > 0, failure == nil else { return }
        let offset = (slice?.lower ?? 0) + written
        do {
            try file.write(UnsafeRawBufferPointer(rebasing: buffer[0..<buffered]), at: offset)
            written += Int64(buffered)
        } catch {
            failure = error.downloadError
        }
        buffered = 0
    }

    /// Status 206 with exactly the asked `Content-Range` for a slice; 2xx for a plain stream.
    private func verdict() -> DownloadError? {
        if let malformed = head.malformation(url: url) { return malformed }
        if let error = head.statusError(url: url, range: remaining) { return error }
        guard let remaining else { return nil }
        return head.ignoredRangeError(url: url) ?? head.contentRangeError(asked: remaining, size: remoteSize, url: url)
    }
}

private func benchWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let connection = Unmanaged<BenchConnection>.fromOpaque(userdata).takeUnretainedValue()
    return connection.receive(UnsafeRawBufferPointer(start: data, count: size * count))
}

private func benchHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let connection = Unmanaged<BenchConnection>.fromOpaque(userdata).takeUnretainedValue()
    return connection.consumeHeader(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}
