import CCurl

/// Asks the server about a file: a `HEAD` request, or where that is refused a `GET` of the first
/// byte (`Range: bytes=0-0`) whose body is abandoned after the headers.
///
/// Blocking: run it off the cooperative thread pool (``Downloader`` does).
struct Prober {
    var request: RequestOptions
    var cancellation: CancellationFlag
    /// The probe runs through this handle, so the download's first request can reuse its
    /// connection.
    var loop: CurlLoop
    /// Where ``RemoteFile/suggestedName`` comes from.
    var names: NameSource = .givenURL

    func probe(_ url: String) throws(DownloadError) -> RemoteFile {
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

    private enum Method { case head, firstByte }

    private struct Exchange {
        var response: ResponseHead
        var effectiveURL: String
    }

    private func exchange(_ url: String, method: Method) throws(DownloadError) -> Exchange {
        let easy = try CurlEasy()
        request.configure(easy, url: url, method: method == .head ? "HEAD" : "GET")
        // The body is not wanted: the transfer stops at its first byte, once the head is complete.
        let collector = ResponseSink(cancellation: cancellation, bodyLimit: nil)
        collector.attach(to: easy)
        switch method {
        case .head: easy.set(CURLOPT_NOBODY, true)
        case .firstByte: easy.set(CURLOPT_RANGE, ByteRange(0, 1).httpRangeSpec)
        }
        // The body is abandoned unread, so a coding it does not really have must not fail the probe.
        easy.set(CURLOPT_HTTP_CONTENT_DECODING, false)
        let result = try withExtendedLifetime(collector) { () throws(DownloadError) in try loop.perform(easy, cancellation: cancellation) }
        if cancellation.isCancelled { throw .cancelled() }
        if let refused = TransferFailure.responseHead(result, head: collector.head, detail: easy.errorDetail, url: url) {
            throw refused
        }
        // A write error is how we abandon a body we do not want; the head is what we came for.
        if result != CURLE_OK && !(result == CURLE_WRITE_ERROR && collector.head.isComplete) {
            throw TransferFailure.curl(result, url: url, detail: easy.errorDetail, proxy: request.proxyInUse(for: url))
        }
        return Exchange(response: collector.head, effectiveURL: easy.effectiveURL ?? url)
    }

    /// What `response` (a probe's, or a mirror's answer to a sample) says about the file at `url`.
    func remoteFile(url: String, effectiveURL: String, response: ResponseHead) -> RemoteFile {
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

    static func reason(_ status: Int) -> String {
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
}
