import RangeFetchBase

/// The user's text for one download (or one S3 listing) parsed once and resolved: what it names
/// (``address``), the URL requests go to (``requestURL``: an `s3://` object's endpoint URL, signed),
/// the request options with their secrets bound to that URL's origin (``request``, see
/// ``CredentialScope``), the run's S3 configuration when it names S3 (``s3``, read at most once per
/// run: ``S3ConfigurationOnce``), and the URL the journal knows the download by (``journalURL``).
/// Made once where the text comes in (``Downloader``, a batch's entry, a prefix listing) and handed
/// on instead of the text.
///
/// | text | as | ``requestURL`` | secrets bound to | ``s3`` | failure |
/// |---|---|---|---|---|---|
/// | `http(s)://h/f` | object | the text | `http(s)://h` | `nil` (a batch's is not for it) | |
/// | `s3://b/k` | object | the endpoint's URL of `b/k`, signed, checksums asked | the endpoint | the run's | a configuration's usage error |
/// | `s3://b/p/` | object | | | | `invalidURL`: names a prefix (`fetchPrefixAsBatch`) |
/// | `s3://b/p/`, `s3://b` | prefix | the endpoint's URL of bucket `b`, signed | the endpoint | the run's | |
/// | `https://h/f`, `s3://b/k` | prefix | | | | `invalidURL`: not an `s3://BUCKET/PREFIX/` URL |
/// | `ftp://h/f`, `h/f`, `s3://` | object | | | | as `SourceAddress.init(_:)`: `unsupportedScheme`, `invalidURL` |
package struct ResolvedSource: Sendable {
    /// What the text names.
    package let address: SourceAddress
    /// Where requests go: the text for HTTP(S), the endpoint's URL for S3.
    package let requestURL: String
    /// The options every request of this source is configured with, secrets bound to the origin
    /// of ``requestURL`` (and the netrc file read).
    package let request: RequestOptions
    /// The S3 configuration requests are signed with; `nil` for an HTTP(S) URL.
    package let s3: S3Configuration?

    /// The text as the user gave it.
    package var text: String { address.text }

    /// The URL the journal knows the download by: the user's own text (an `s3://` URL, not its
    /// endpoint's; never a redirect's target). The journal keeps it only as ``JournalIdentity``
    /// makes it: redacted, without a signed URL's per-signature parameters.
    package var journalURL: String { address.text }

    /// `text` as an object to download: see the table.
    /// - Throws: as `SourceAddress.init(_:)`; `invalidURL` for an `s3://` prefix; the S3
    ///   configuration's usage error; a netrc file's error.
    package init(object text: String, request: RequestOptions, s3: S3ConfigurationOnce) throws(DownloadError) {
        try self.init(object: Self.address(text), request: request, s3: s3)
    }

    /// `address` as an object to download (an address already parsed: a batch's entry).
    package init(object address: SourceAddress, request: RequestOptions, s3: S3ConfigurationOnce) throws(DownloadError) {
        var request = request
        guard let location = address.s3 else {
            try request.bindSecrets(to: address.text)
            self.init(address: address, requestURL: address.text, request: request, s3: nil)
            return
        }
        guard !location.isPrefix else {
            throw DownloadError(.invalidURL, "\(address.text) names a prefix, not an object", url: address.text,
                                remedy: .fetchPrefixAsBatch)
        }
        let configuration = try s3.configuration()
        request.s3Signer = configuration.signer
        request.s3ChecksumMode = true
        let endpointURL = configuration.url(bucket: location.bucket, key: location.key)
        try request.bindSecrets(to: endpointURL)
        // An s3:// object's endpoint URL comes from the configuration: checked as any URL.
        _ = try SourceAddress.http(endpointURL)
        self.init(address: address, requestURL: endpointURL, request: request, s3: configuration)
    }

    /// `text` as an `s3://BUCKET/PREFIX/` to list: requests go to the bucket's endpoint URL.
    /// - Throws: `invalidURL` when it is no such URL; the S3 configuration's usage error.
    package init(prefix text: String, request: RequestOptions, s3: S3ConfigurationOnce) throws(DownloadError) {
        guard let address = try? Self.address(text), let location = address.s3, location.isPrefix else {
            throw DownloadError(.invalidURL, "\(text): not an s3://BUCKET/PREFIX/ URL", url: text)
        }
        let configuration = try s3.configuration()
        var request = request
        request.s3Signer = configuration.signer
        let bucketURL = configuration.url(bucket: location.bucket, key: "")
        try request.bindSecrets(to: bucketURL)
        self.init(address: address, requestURL: bucketURL, request: request, s3: configuration)
    }

    private init(address: SourceAddress, requestURL: String, request: RequestOptions, s3: S3Configuration?) {
        self.address = address
        self.requestURL = requestURL
        self.request = request
        self.s3 = s3
    }

    /// The one place the library parses a user's text into an address.
    private static func address(_ text: String) throws(DownloadError) -> SourceAddress {
        try SourceAddress(text)
    }
}
