import RangeFetchBase
import CCurl

/// A GET whose body is read whole into memory (at most ``maximumBodyBytes``), on the calling
/// thread: S3 listings and error bodies, and the byte samples that check a mirror.
package struct SmallGet {
    package var request: RequestOptions
    package var cancellation: CancellationFlag
    package var loop: CurlLoop

    /// Biggest body read (a ListObjectsV2 page of 1,000 keys is a few hundred KiB).
    package static let maximumBodyBytes = 16 << 20

    package struct Answer {
        package var status: Int
        package var body: [UInt8]
        /// `Content-Range`, for a ranged request.
        package var contentRange: ContentRange?
        /// The whole response head, for ``ResponseValidator``.
        package var head: ResponseHead

        package init(status: Int, body: [UInt8], contentRange: ContentRange? = nil, head: ResponseHead) {
            self.status = status
            self.body = body
            self.contentRange = contentRange
            self.head = head
        }
    }

    /// GETs `url` (the whole body, or `range` of it).
    package func fetch(_ url: String, range: ByteRange? = nil) throws(DownloadError) -> Answer {
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

    package init(request: RequestOptions, cancellation: CancellationFlag, loop: CurlLoop) {
        self.request = request
        self.cancellation = cancellation
        self.loop = loop
    }
}
