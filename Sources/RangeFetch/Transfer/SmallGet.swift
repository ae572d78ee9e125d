import CCurl

/// A GET whose body is read whole into memory (at most ``maximumBodyBytes``), on the calling
/// thread: S3 listings and error bodies, and the byte samples that check a mirror.
struct SmallGet {
    var request: RequestOptions
    var cancellation: CancellationFlag
    var loop: CurlLoop

    /// Biggest body read (a ListObjectsV2 page of 1,000 keys is a few hundred KiB).
    static let maximumBodyBytes = 16 << 20

    struct Answer {
        var status: Int
        var body: [UInt8]
        /// `Content-Range`, for a ranged request.
        var contentRange: ContentRange?
        /// The whole response head, for ``ResponseValidator``.
        var head: ResponseHead
    }

    /// GETs `url` (the whole body, or `range` of it).
    func fetch(_ url: String, range: ByteRange? = nil) throws(DownloadError) -> Answer {
        let easy = try CurlEasy()
        request.configure(easy, url: url, extraHeaders: range == nil ? [] : ["Accept-Encoding: identity"])
        if let range { easy.set(CURLOPT_RANGE, range.httpRangeSpec) }
        let sink = ResponseSink(cancellation: cancellation, bodyLimit: Self.maximumBodyBytes)
        sink.attach(to: easy)
        let result = try withExtendedLifetime(sink) { () throws(DownloadError) in try loop.perform(easy, cancellation: cancellation) }
        if cancellation.isCancelled { throw .cancelled() }
        guard result == CURLE_OK else {
            throw TransferFailure.curl(result, url: url, detail: easy.errorDetail, proxy: request.proxyInUse(for: url))
        }
        return Answer(status: easy.responseCode, body: sink.body ?? [], contentRange: sink.head.contentRange, head: sink.head)
    }
}
