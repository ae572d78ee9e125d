import RangeFetchBase
import CCurl

/// The few S3 calls besides GetObject: listing a prefix (ListObjectsV2, a page at a time) and
/// reading an error body for its `<Code>`. Small GETs read whole into memory, on the calling thread.
package struct S3Client {
    package var configuration: S3Configuration
    package var request: RequestOptions
    package var cancellation: CancellationFlag
    package var loop: CurlLoop

    /// An object under a listed prefix.
    package struct Object: Sendable, Equatable {
        package var key: String
        package var size: Int64
        /// The ETag without quotes: an MD5 of the bytes for a single-part upload; for a
        /// multipart one `MD5-N`, which is not a digest of the file.
        package var etag: String?

        /// The object's MD5, when its ETag is one (32 hex digits, no `-N` part count).
        package var md5: String? {
            guard let etag, etag.count == 32, etag.allSatisfy(\.isHexDigit) else { return nil }
            return etag.lowercased()
        }

        package init(key: String, size: Int64, etag: String? = nil) {
            self.key = key
            self.size = size
            self.etag = etag
        }
    }

    /// One page of `prefix` in `bucket` (ListObjectsV2): the first, or the one `continuationToken`
    /// starts; `maxKeys` asks for at most that many keys (`nil`: the store's default, 1,000 on S3).
    /// ``PrefixLister`` follows the tokens.
    package func page(bucket: String, prefix: String, continuationToken: String?, maxKeys: Int? = nil) throws(DownloadError) -> ListingPage {
        let listing = "s3://\(bucket)/\(prefix)"
        let url = configuration.listURL(bucket: bucket, prefix: prefix, continuationToken: continuationToken, maxKeys: maxKeys)
        let (status, body) = try get(url)
        guard status == 200 else { throw Self.error(status: status, body: body, listing: listing) }
        let page = try Self.parseListing(body, what: listing)
        return ListingPage(objects: page.objects, nextToken: page.nextToken)
    }

    /// One ListObjectsV2 page: its objects and the token of the next page, if truncated.
    /// `what` is the listing's `s3://BUCKET/PREFIX` URL, which errors name.
    package static func parseListing(_ body: [UInt8], what: String) throws(DownloadError) -> (objects: [Object], nextToken: String?) {
        let result: XMLTree.Element
        do {
            result = try XMLTree.parse(body)
        } catch .noParser {
            throw DownloadError(.missingLibrary, "\(what): reading the listing needs libxml2 (libxml2.so.2, Debian package libxml2), which could not be loaded", url: what)
        } catch {
            throw DownloadError(.protocolViolation, "\(what): the listing is not well-formed XML", url: what)
        }
        guard result.name == "ListBucketResult" else {
            throw DownloadError(.protocolViolation, "\(what): the listing is not a ListBucketResult", url: what)
        }
        var objects: [Object] = []
        // Asked for with encoding-type=url; a server that ignores it sends keys as they are.
        let urlEncoded = result["EncodingType"]?.text == "url"
        for entry in result.all("Contents") {
            guard let raw = entry["Key"]?.text, let size = entry["Size"].flatMap({ Int64($0.text) }) else {
                throw DownloadError(.protocolViolation, "\(what): a listed object has no Key or Size", url: what)
            }
            guard let key = urlEncoded ? ListingKeyDecoding.decode(raw) : raw else {
                throw DownloadError(.protocolViolation, "\(what): a listed key is not valid URL encoding (\(raw))", url: what)
            }
            let etag = entry["ETag"]?.text.replacingQuotes
            objects.append(Object(key: key, size: size, etag: etag))
        }
        let truncated = result["IsTruncated"]?.text == "true"
        let token = result["NextContinuationToken"]?.text
        if truncated && (token ?? "").isEmpty {
            throw DownloadError(.protocolViolation, "\(what): the listing is truncated but gives no continuation token", url: what)
        }
        return (objects, truncated ? token : nil)
    }

    /// A download error for an S3 answer with `status` to a request for `listing`
    /// (`s3://BUCKET/PREFIX`), naming S3's error code and message.
    package static func error(status: Int, body: [UInt8], listing: String) -> DownloadError {
        let detail = errorDetail(body).map { ": S3 said \($0)" } ?? ""
        return DownloadError(.httpStatus(status), "listing \(listing): HTTP \(status)\(detail)", url: listing)
    }

    /// `Code: Message` of an S3 error body, if it is one.
    package static func errorDetail(_ body: [UInt8]) -> String? {
        guard let error = try? XMLTree.parse(body), error.name == "Error", let code = error["Code"]?.text else { return nil }
        return error["Message"].map { "\(code) (\($0.text))" } ?? code
    }

    /// GETs `url` (signed) and returns the status and the body.
    package func get(_ url: String) throws(DownloadError) -> (status: Int, body: [UInt8]) {
        let answer = try SmallGet(request: request, cancellation: cancellation, loop: loop).fetch(url)
        return (answer.status, answer.body)
    }

    package init(configuration: S3Configuration, request: RequestOptions, cancellation: CancellationFlag, loop: CurlLoop) {
        self.configuration = configuration
        self.request = request
        self.cancellation = cancellation
        self.loop = loop
    }
}

private extension String {
    var replacingQuotes: String { String(filter { $0 != "\"" }) }
}
