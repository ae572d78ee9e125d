import RangeFetchBase

/// Judges one response head against what was asked: the status, `Content-Range`, encoding,
/// and the validators (`ETag`, `Last-Modified`, size) the probe saw. Pure: no sockets, no state;
/// the engine, the mirror spot checks and tests all ask it the same way.
///
/// The rules, in order (the first that applies decides):
///
/// | Response                                                    | Verdict            |
/// |-------------------------------------------------------------|--------------------|
/// | head over the limits, unusable `Content-Length`             | `fatal`            |
/// | 416 whose `*/SIZE` is the file's size, to a range inside it  | `oneStream`        |
/// | other 416                                                   | `restartWhole`     |
/// | 401, 403, 410, 400 with an expiry body; request to a redirect target | `reResolve` |
/// | the same, request to the user's URL                         | `excludeSource`    |
/// | 429, 503                                                    | `pushback`         |
/// | other 5xx, 408                                              | `retry`            |
/// | other non-2xx                                               | `fatal`            |
/// | other ETag and Last-Modified (or other Last-Modified)       | `restartWhole`     |
/// | plain request: 200 whose length is not the file's size      | `restartWhole`     |
/// | range asked, another origin's ETag, 200                     | `retry` (If-Range by date next) |
/// | range asked, 2xx other than 206; or Content-Encoding        | `oneStream`        |
/// | 206 whose complete length is not the file's size            | `restartWhole`     |
/// | 206 with another range                                      | `oneStream`        |
/// | otherwise                                                   | `accept`           |
///
/// Once an accepted 206's body has ended, ``verdict(content:)`` judges it by its
/// `Content-Digest`: a mismatch is `rejectRange`; a match or no proof (the body ended short) is
/// `accept`.
package struct ResponseValidator: Sendable {
    /// The file as the probe saw it (its `url` names it in messages).
    package var remote: RemoteFile
    /// The byte range asked for; `nil` for a plain request.
    package var asked: ByteRange?
    /// Whether the request went to the URL the user gave, not to a resolved redirect target.
    package var toUserURL: Bool

    /// The verdict on `head`. `errorBody` is the start of an error response's body: a 400 means
    /// an expired signature only when it says so (it arrives after the head, so a verdict taken
    /// from the head alone may change once it has).
    package func verdict(_ head: ResponseHead, errorBody: String = "") -> ResponseVerdict {
        let url = remote.url
        if let malformed = head.malformation(url: url) { return .fatal(malformed) }
        if let error = head.statusError(url: url, range: asked) {
            return statusVerdict(head, error: error, errorBody: errorBody)
        }
        if let changed = changedVersion(head) { return .restartWhole(changed) }
        guard let asked else { return .accept }
        if identity(head) == .otherETag && head.status == 200 {
            // Another origin did not know the ETag sent in If-Range and sent the whole file: the
            // retry sends the Last-Modified date instead (see Source).
            return .retry(DownloadError(.protocolViolation, "\(url): another origin answered with ETag \(head["etag"] ?? "") and the whole file; asking again with If-Range by date", url: url), after: nil)
        }
        if let ignored = head.ignoredRangeError(url: url) { return .oneStream(ignored) }
        if let coding = head.contentEncoding {
            // Ranges of an encoded body are not ranges of the file: fall back to one decoded stream.
            return .oneStream(DownloadError(.rangesNotHonoured, "\(url): server sent Content-Encoding \(coding) for a range; ranges of an encoded body are not ranges of the file", url: url))
        }
        if let mismatch = head.contentRangeError(asked: asked, size: remote.size, url: url) {
            if let total = head.contentRange?.completeLength, total != remote.size {
                return .restartWhole(DownloadError(.remoteChanged, "\(url): file size changed on the server from \(remote.size ?? 0) to \(total) bytes.", url: url))
            }
            // A server that answers other bytes than asked cannot be given ranges: one plain
            // stream (curl's and aria2c's way) is what it can serve. Its body is never written.
            return .oneStream(DownloadError(.rangesNotHonoured, "\(mismatch.message); its ranges cannot be trusted", url: url))
        }
        return .accept
    }

    /// The verdict on an accepted response's content, by what its `Content-Digest` proved.
    package func verdict(content proof: ContentProof) -> ResponseVerdict {
        guard case .mismatched(let algorithm, let expected, let actual) = proof else { return .accept }
        let url = remote.url
        let range = asked.map { " \($0.httpRangeSpec)" } ?? ""
        return .rejectRange(DownloadError(.checksumMismatch, "\(url): the bytes\(range) do not match the response's Content-Digest (\(algorithm) \(expected) announced, \(actual) received)", url: url))
    }

    /// Whether `head` is a usable 2xx answer carrying another origin's ETag for the same file
    /// (same `Last-Modified`): worth noting, since `If-Range` must then carry the date.
    package func carriesOtherETag(_ head: ResponseHead) -> Bool {
        head.malformation(url: remote.url) == nil && (200..<300).contains(head.status) && identity(head) == .otherETag
    }

    private func statusVerdict(_ head: ResponseHead, error: DownloadError, errorBody: String) -> ResponseVerdict {
        let status = head.status
        if status == 416, let asked, let size = remote.size, asked.upper <= size,
           let unsatisfied = head.contentRange, unsatisfied.range == nil, unsatisfied.completeLength == size {
            // The size it refuses a range of is the size it announced: the file did not change,
            // the server just does not serve ranges of it.
            return .oneStream(DownloadError(.rangesNotHonoured, "\(remote.url): server refused range \(asked.httpRangeSpec) of its \(size)-byte file as not satisfiable (HTTP 416)", url: remote.url))
        }
        if status == 416 {
            return .restartWhole(DownloadError(.remoteChanged, "\(remote.url): range \(asked?.httpRangeSpec ?? "") not satisfiable; the file on the server changed (was \(remote.size ?? 0) bytes).", url: remote.url))
        }
        if Source.mayMeanExpiredSignature(status: status, body: errorBody) {
            return toUserURL ? .excludeSource(error, status: status) : .reResolve(error, status: status)
        }
        if status == 429 || status == 503 { return .pushback(error, after: error.retryAfterSeconds) }
        return error.isTransient ? .retry(error, after: error.retryAfterSeconds) : .fatal(error)
    }

    private func identity(_ head: ResponseHead) -> Source.Identity {
        Source.identity(etag: head["etag"], lastModified: head["last-modified"], of: remote)
    }

    /// A response whose validators contradict the probe's means the file changed under us.
    private func changedVersion(_ head: ResponseHead) -> DownloadError? {
        let url = remote.url
        if identity(head) == .changed {
            if let expected = remote.etag, let actual = head["etag"], expected != actual {
                return DownloadError(.remoteChanged, "\(url): file changed on the server (ETag \(expected) became \(actual), Last-Modified \(remote.lastModified ?? "none") became \(head["last-modified"] ?? "none"))", url: url)
            }
            return DownloadError(.remoteChanged, "\(url): file changed on the server (Last-Modified \(remote.lastModified ?? "none") became \(head["last-modified"] ?? "none"))", url: url)
        }
        if asked == nil, head.status == 200, let size = remote.size, let length = head.contentLength,
           !head.hasContentEncoding, length != size {
            return DownloadError(.remoteChanged, "\(url): file size changed on the server from \(size) to \(length) bytes.", url: url)
        }
        return nil
    }

    package init(remote: RemoteFile, asked: ByteRange? = nil, toUserURL: Bool) {
        self.remote = remote
        self.asked = asked
        self.toUserURL = toUserURL
    }
}
