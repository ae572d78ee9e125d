import RangeFetchBase
import CCurl

/// Setting a segment's request up, and the record of its end.
extension SegmentTransfer {
    /// Configures the easy handle for this request: the range with `If-Range` (a file that
    /// changed since the probe answers 200 instead of 206: caught, never merged), the callbacks
    /// into this transfer, and a connection lifetime when connections are recycled.
    package func configure(_ options: RequestOptions, ifRange validator: String?, connectionLifetime: Int?,
                   limiter: UnsafeMutablePointer<RateLimiter>?) {
        var extraHeaders: [String] = []
        if let requested {
            easy.set(CURLOPT_RANGE, requested.httpRangeSpec)
            if let validator { extraHeaders.append("If-Range: \(validator)") }
            extraHeaders.append("Accept-Encoding: identity")
            // RFC 9530: a range's own digest proves it as it lands (``ContentDigestCheck``); the
            // whole file's is checked at the end. Cheap for a server that ignores them.
            extraHeaders.append("Want-Content-Digest: sha-256=10")
            extraHeaders.append("Want-Repr-Digest: sha-256=10")
        }
        self.limiter = limiter
        holdsDecodedBytesToTheLimit(requested == nil && !options.headers.contains { RequestOptions.fieldName($0) == "accept-encoding" })
        options.configure(easy, url: url, extraHeaders: extraHeaders)
        if let connectionLifetime { easy.set(CURLOPT_MAXLIFETIME_CONN, connectionLifetime) }
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        easy.setWriteCallback(segmentWriteCallback, userdata: userdata)
        easy.setHeaderCallback(segmentHeaderCallback, userdata: userdata)
    }

    /// The request's end for `--verbose` listings, once libcurl finished it with `result`.
    package func end(result: CURLcode, connectionSawLoss: Bool?, now: Double) -> RequestEnd {
        let timings = easy.connectionTimings
        var end = RequestEnd(
            range: requested, status: head.status, bytes: bytesReceived, seconds: now - startedAt,
            retry: segment.triesWithoutProgress,
            // A stolen tail is ended by us (the write callback takes no more): not a failure. A
            // bad metalink piece is ended by us too, and says so.
            failure: failure?.error.message
                ?? proofs.pieceCheck?.mismatch.map { "piece \($0.index) does not match the metalink's piece digest" }
                ?? (result == CURLE_OK || stoppedAtSegmentEnd ? nil : result.explanation),
            httpVersion: httpVersion ?? (head.status != 0 ? easy.httpVersion : nil))
        end.newConnection = timings.newConnection
        end.setupSeconds = timings.newConnection ? timings.setupSeconds : nil
        end.firstByteSeconds = head.status != 0 ? timings.firstByteSeconds : nil
        end.packetsOutOfOrder = connectionSawLoss
        return end
    }

    /// How this request turns out once libcurl ended it with `result` and its proof is settled
    /// (``settleProof(result:)``); `userURL` is its source's URL as the user gave it, `proxy` the
    /// one it went through.
    package func outcome(result: CURLcode, userURL: String, proxy: String?, streamOfUnknownLength: Bool) -> RequestOutcome {
        RequestOutcome(RequestOutcome.Facts(
            proof: RangeProof(ended: self, userURL: userURL), verdict: finalVerdict, transport: result,
            stoppedAtSegmentEnd: stoppedAtSegmentEnd, failure: failure, receivedBytes: bytesReceived,
            segmentDone: segment.outstanding.isEmpty, streamOfUnknownLength: streamOfUnknownLength,
            shortEnd: shortEnd(result: result, proxy: proxy), transportDetail: easy.errorDetail))
    }

    /// Why a request that ended with `result` left bytes of its range unfetched.
    package func shortEnd(result: CURLcode, proxy: String?) -> DownloadError {
        let url = Redaction.url(url)
        guard result != CURLE_OK else {
            return DownloadError(.protocolViolation, "\(url): connection closed after \(bytesReceived) of \(requested?.count ?? segment.state.range.count) bytes", url: url)
        }
        return TransferFailure.responseHead(result, head: head, detail: easy.errorDetail, url: url)
            ?? TransferFailure.curl(result, url: url, detail: easy.errorDetail, proxy: proxy)
    }
}
