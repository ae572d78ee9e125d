import RangeFetchBase
import CCurl

/// Asks the server about a file: a `HEAD` request, or where that is refused a `GET` of the first
/// byte (`Range: bytes=0-0`) whose body is abandoned after the headers.
///
/// Blocking: run it off the cooperative thread pool (``Downloader`` does).
package struct Prober {
    package var request: RequestOptions
    package var cancellation: CancellationFlag
    /// The probe runs through this handle, so the download's first request can reuse its
    /// connection.
    package var loop: CurlLoop
    /// Where ``RemoteFile/suggestedName`` comes from.
    package var names: NameSource = .givenURL

    package func probe(_ url: String) throws(DownloadError) -> RemoteFile {
        let head = try exchange(url, method: .head)
        if (200..<300).contains(head.response.status), head.response.contentLength != nil || head.response["accept-ranges"] != nil {
            return remoteFile(url: url, effectiveURL: head.effectiveURL, response: head.response)
        }
        // HEAD refused, failed, or said too little: ask for the first byte instead.
        let get = try exchange(url, method: .firstByte)
        let status = get.response.status
        if let error = get.response.statusError(url: url) { throw error }
        var file = remoteFile(url: url, effectiveURL: get.effectiveURL, response: get.response)
        if status == 206 {
            guard let contentRange = get.response.contentRange, contentRange.range == ByteRange(0, 1) else {
                throw DownloadError(.protocolViolation,
                                    "\(url): server answered a request for byte 0 with Content-Range \(get.response["content-range"] ?? "(none)")", url: url)
            }
            file.acceptsRanges = true
            file.size = contentRange.completeLength
        } else {
            file.acceptsRanges = false
        }
        return file
    }

    /// What a probe that keeps the body learnt: the file, and its first bytes (the whole file
    /// when ``isWhole``). `prefix` is empty when nothing worth keeping came.
    package struct Answer {
        package var remote: RemoteFile
        package var prefix: [UInt8] = []

        /// Whether `prefix` is the whole file.
        package var isWhole: Bool { remote.size == Int64(prefix.count) && remote.decodingWarning == nil }

        package init(remote: RemoteFile, prefix: [UInt8] = []) {
            self.remote = remote
            self.prefix = prefix
        }
    }

    /// Probes with a `GET` of the first `limit` bytes, and keeps them: a file that small comes
    /// whole in one request, where ``probe(_:)`` and the download would cost two (a batch of
    /// small files is made of these). A larger file's first `limit` bytes come too, as the start
    /// of its download. A server that ignores `Range` sends the whole file: kept when it fits,
    /// else the transfer stops at the body's first byte. Answers that cannot be read this way
    /// (416, a `Content-Range` other than the one asked, a coded body) fall back to ``probe(_:)``.
    package func probe(_ url: String, keepingUpTo limit: Int) throws(DownloadError) -> Answer {
        let exchange = try PrefixExchange(url: url, limit: limit, request: request, cancellation: cancellation)
        let result = try withExtendedLifetime(exchange) { () throws(DownloadError) in
            try loop.perform(exchange.easy, cancellation: cancellation)
        }
        if let answer = try answer(exchange, result: result) { return answer }
        return Answer(remote: try probe(url))
    }

    /// What a ``PrefixExchange`` that ended with `result` (run on any loop) says: `nil` when its
    /// answer cannot be read that way (416, a `Content-Range` other than the one asked, a coded
    /// body), and ``probe(_:)`` is to be asked instead.
    /// - Throws: the server's refusal (a status error), or the transport failure.
    package func answer(_ exchange: PrefixExchange, result: CURLcode) throws(DownloadError) -> Answer? {
        let url = exchange.url
        let got = try exchange.ended(result, cancellation: cancellation, proxy: request.proxyInUse(for: url))
        let response = got.response
        guard response.status != 416, !response.hasContentEncoding else { return nil }
        if let error = response.statusError(url: url) { throw error }
        var file = remoteFile(url: url, effectiveURL: got.effectiveURL, response: response)
        let body = got.completed ? got.body ?? [] : []
        if response.status == 206 {
            guard let contentRange = response.contentRange, let range = contentRange.range, let total = contentRange.completeLength,
                  range == ByteRange(0, min(exchange.asked.upper, total)) else { return nil }
            file.acceptsRanges = true
            file.size = total
            return Answer(remote: file, prefix: Int64(body.count) == range.count ? body : [])
        }
        // The whole file, Range ignored: kept when all of it came.
        file.acceptsRanges = false
        guard got.completed, file.size == nil || file.size == Int64(body.count) else { return Answer(remote: file) }
        file.size = Int64(body.count)
        return Answer(remote: file, prefix: body)
    }

    fileprivate enum Method {
        case head, firstByte
        /// A `GET` of `range` whose body is kept, dropped at its first byte when the head says the
        /// whole file will not fit.
        case prefix(ByteRange)
    }

    fileprivate struct Exchange {
        var response: ResponseHead
        var effectiveURL: String
        /// The body kept (``Method/prefix(_:)``).
        var body: [UInt8]? = nil
        /// Whether the transfer ended as the server sent it, not stopped by us.
        var completed = true
    }

    private func exchange(_ url: String, method: Method) throws(DownloadError) -> Exchange {
        let request = try ProbeRequest(url: url, method: method, request: self.request, cancellation: cancellation)
        let result = try withExtendedLifetime(request) { () throws(DownloadError) in
            try loop.perform(request.easy, cancellation: cancellation)
        }
        return try request.ended(result, cancellation: cancellation, proxy: self.request.proxyInUse(for: url))
    }

    /// What `response` (a probe's, or a mirror's answer to a sample) says about the file at `url`.
    package func remoteFile(url: String, effectiveURL: String, response: ResponseHead) -> RemoteFile {
        let encoded = response.hasContentEncoding
        let composite = AdvertisedDigestParser.compositeChecksums(response)
        let name = names.name(url: url, redirectedTo: effectiveURL == url ? nil : effectiveURL, contentDisposition: response["content-disposition"])
        return RemoteFile(
            url: url,
            redirectedTo: effectiveURL == url ? nil : effectiveURL,
            size: encoded ? nil : response.contentLength,
            acceptsRanges: !encoded && (response["accept-ranges"]?.lowercased().contains("bytes") ?? false),
            etag: response["etag"],
            lastModified: response["last-modified"],
            suggestedName: name,
            advertisedDigests: AdvertisedDigestParser.parse(response),
            contentEncoding: response.contentEncoding,
            compositeChecksums: composite.isEmpty ? nil : composite,
            duplicates: LinkHeader.duplicates(response["link"], of: url),
            backupDuplicates: LinkHeader.backupDuplicates(response["link"], of: url),
            describedBy: LinkHeader.metalinkDescription(response["link"])
        )
    }

    package static func reason(_ status: Int) -> String {
        switch status {
        case 401: " (authentication required)"
        case 403: " (forbidden)"
        case 404: " (not found)"
        case 407: " (proxy authentication required)"
        case 410: " (gone)"
        case 416: " (range not satisfiable)"
        case 429: " (too many requests)"
        case 500..<600: " (server error)"
        default: ""
        }
    }

    package init(request: RequestOptions, cancellation: CancellationFlag, loop: CurlLoop, names: NameSource = .givenURL) {
        self.request = request
        self.cancellation = cancellation
        self.loop = loop
        self.names = names
    }
}

/// One probe's request, configured and ready for a loop (``CurlLoop/perform(_:cancellation:)``,
/// or a client's loop running many), and how its end reads.
private final class ProbeRequest {
    static let receiveBufferBytes = 16 * 1024
    let url: String
    let easy: CurlEasy
    private let collector: ResponseSink

    init(url: String, method: Prober.Method, request: RequestOptions, cancellation: CancellationFlag) throws(DownloadError) {
        self.url = url
        easy = try CurlEasy()
        var isHead = false
        if case .head = method { isHead = true }
        request.configure(easy, url: url, method: isHead ? "HEAD" : "GET")
        // Unless kept, the body is not wanted: the transfer stops at its first byte, once the head is complete.
        var limit: Int?
        if case .prefix(let range) = method { limit = Int(range.count) }
        collector = ResponseSink(cancellation: cancellation, bodyLimit: limit)
        collector.attach(to: easy)
        switch method {
        case .head: easy.set(CURLOPT_NOBODY, true)
        case .firstByte: easy.set(CURLOPT_RANGE, ByteRange(0, 1).httpRangeSpec)
        case .prefix(let range):
            easy.set(CURLOPT_RANGE, range.httpRangeSpec)
            // A whole file (Range ignored) that will not fit is not read: its first byte ends it.
            collector.bodyWanted = { head in
                head.status == 206 || head.hasContentEncoding == false && (head.contentLength.map { $0 <= range.count } ?? true)
            }
        }
        // The body is abandoned unread, so a coding it does not really have must not fail the probe.
        easy.set(CURLOPT_HTTP_CONTENT_DECODING, false)
        // A head, or a few KiB kept: libcurl's default receive buffer, not a range's 64 KiB
        // (allocated for every probe; a list of small files makes one each).
        easy.set(CURLOPT_BUFFERSIZE, Self.receiveBufferBytes)
    }

    /// The exchange of a request that ended with `result`.
    /// - Throws: cancellation, the server's refusal of the request, or the transport's failure.
    func ended(_ result: CURLcode, cancellation: CancellationFlag,
                        proxy: @autoclosure () -> String?) throws(DownloadError) -> Prober.Exchange {
        if cancellation.isCancelled { throw .cancelled() }
        if let refused = TransferFailure.responseHead(result, head: collector.head, detail: easy.errorDetail, url: url) {
            throw refused
        }
        // A write error is how we abandon a body we do not want; the head is what we came for.
        if result != CURLE_OK && !(result == CURLE_WRITE_ERROR && collector.head.isComplete) {
            throw TransferFailure.curl(result, url: url, detail: easy.errorDetail, proxy: proxy())
        }
        return Prober.Exchange(response: collector.head, effectiveURL: easy.effectiveURL ?? url, body: collector.body,
                               completed: result == CURLE_OK)
    }
}

/// A probe that keeps the file's first bytes (``Prober/probe(_:keepingUpTo:)``), made ready to run
/// on a loop of the caller's: its end is read by ``Prober/answer(_:result:)``. A batch's lane of
/// small files runs many at once on one loop (``SmallFileLane``).
package final class PrefixExchange {
    package let url: String
    /// The range asked for: the first `limit` bytes.
    package let asked: ByteRange
    private let request: ProbeRequest

    package init(url: String, limit: Int, request: RequestOptions, cancellation: CancellationFlag) throws(DownloadError) {
        self.url = url
        asked = ByteRange(0, Int64(limit))
        self.request = try ProbeRequest(url: url, method: .prefix(asked), request: request, cancellation: cancellation)
    }

    /// The handle to run; it belongs to this exchange, which must outlive the request.
    package var easy: CurlEasy { request.easy }

    fileprivate func ended(_ result: CURLcode, cancellation: CancellationFlag,
                        proxy: @autoclosure () -> String?) throws(DownloadError) -> Prober.Exchange {
        try request.ended(result, cancellation: cancellation, proxy: proxy())
    }
}
