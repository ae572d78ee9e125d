import CCurl

/// A GET whose body is read whole into memory (at most ``maximumBodyBytes``), on the calling
/// thread: S3 listings and error bodies, and the byte samples that check a mirror.
struct SmallGet {
    var request: RequestOptions
    var cancellation: CancellationFlag
    var multi: CurlMulti

    static let maximumBodyBytes = 16 << 20

    struct Answer {
        var status: Int
        var body: [UInt8]
        /// `Content-Range`, for a ranged request.
        var contentRange: ContentRange?
    }

    /// GETs `url` (the whole body, or `range` of it).
    func fetch(_ url: String, range: ByteRange? = nil) throws(DownloadError) -> Answer {
        let easy = CurlEasy()
        request.configure(easy, url: url, extraHeaders: range == nil ? [] : ["Accept-Encoding: identity"])
        if let range { easy.set(CURLOPT_RANGE, range.httpRangeSpec) }
        let sink = SmallBody(cancellation: cancellation)
        let userdata = Unmanaged.passUnretained(sink).toOpaque()
        easy.setWriteCallback(smallBodyWriteCallback, userdata: userdata)
        easy.setHeaderCallback(smallHeaderCallback, userdata: userdata)
        let result = withExtendedLifetime(sink) { multi.run(easy, cancellation: cancellation) }
        if cancellation.isCancelled { throw .cancelled() }
        guard result == CURLE_OK else {
            throw TransferFailure.curl(result, url: url, detail: easy.errorDetail, proxy: request.proxyInUse(for: url))
        }
        return Answer(status: easy.responseCode, body: sink.bytes, contentRange: sink.head.contentRange)
    }
}

private final class SmallBody {
    var bytes: [UInt8] = []
    var head = ResponseHead()
    let cancellation: CancellationFlag
    init(cancellation: CancellationFlag) { self.cancellation = cancellation }
}

private func smallBodyWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let sink = Unmanaged<SmallBody>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    guard !sink.cancellation.isCancelled, sink.bytes.count + length <= SmallGet.maximumBodyBytes else { return 0 }
    sink.bytes += UnsafeRawBufferPointer(start: data, count: length)
    return length
}

private func smallHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    let sink = Unmanaged<SmallBody>.fromOpaque(userdata).takeUnretainedValue()
    return sink.head.consume(bytes: UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}
