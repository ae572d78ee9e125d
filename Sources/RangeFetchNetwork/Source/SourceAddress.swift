import RangeFetchBase

/// Where the user says a file is, parsed once from the text given: an `http://` or `https://`
/// URL, or an `s3://BUCKET/KEY` object (an `s3://BUCKET/PREFIX/` names every object under it).
///
/// The one place that decides which schemes rangefetch takes; the transfers accept the same
/// (`transferProtocols`). A pure value: no sockets, tested as a table.
///
/// | text | ``Kind`` | failure |
/// |---|---|---|
/// | `http://h/x`, `HTTPS://h/x` | ``Kind/http(_:)`` | |
/// | `s3://bucket/key`, `s3://bucket/dir/` | ``Kind/s3(_:)`` (an object, a prefix) | |
/// | `s3://`, `s3:///key` | | `invalidURL`: no bucket |
/// | `ftp://h/x`, `file:///x` | | `unsupportedScheme` |
/// | `h/x`, `http://` | | `invalidURL`: not a URL, malformed |
///
/// A local `FILE.meta4` is no address: ``isMetalinkFile(_:)`` tells it apart first.
package struct SourceAddress: Sendable, Equatable {
    /// What the address names.
    public enum Kind: Sendable, Equatable {
        /// An HTTP(S) URL, as libcurl splits it.
        case http(URLParts)
        /// An S3 object or prefix, requested at its endpoint's HTTP(S) URL (``S3Configuration``).
        case s3(S3Location)
    }

    /// The text as the user gave it (requests use it as it is).
    public let text: String
    /// What it names.
    public let kind: Kind

    /// The schemes a transfer may use, also after a redirect (libcurl's protocol list): an
    /// `s3://` address is requested over these too.
    package static let transferProtocols = "http,https"

    /// Whether `url` is an https URL (the scheme in any letter case).
    package static func isHTTPS(_ url: String) -> Bool {
        url.utf8.prefix(8).map { $0 | 0x20 }.elementsEqual("https://".utf8)
    }

    /// Whether going from `url` to `other` (a mirror, a redirect target) leaves https for plain
    /// http: the bytes would cross the network unencrypted and unauthenticated.
    package static func downgradesToPlainHTTP(from url: String, to other: String) -> Bool {
        isHTTPS(url) && other.utf8.prefix(7).map { $0 | 0x20 }.elementsEqual("http://".utf8)
    }

    /// Parses `text`.
    /// - Throws: `invalidURL` for text that is no URL, a malformed one or an `s3://` URL without
    ///   a bucket; `unsupportedScheme` for a scheme other than http, https and s3. The message
    ///   names the text (its password redacted) and what is expected.
    public init(_ text: String) throws(DownloadError) {
        self.text = text
        if Self.hasS3Scheme(text) {
            guard let location = Self.s3Location(text) else {
                throw DownloadError(.invalidURL, "\(Redaction.url(text)): no bucket (expected s3://BUCKET/KEY)", url: text)
            }
            kind = .s3(location)
        } else {
            kind = .http(try Self.httpParts(text, expected: "http://, https:// or s3://"))
        }
    }

    /// Parses `text` as an address that must be HTTP(S), such as a mirror.
    /// - Throws: as ``init(_:)``, and `unsupportedScheme` for an `s3://` URL too.
    public static func http(_ text: String) throws(DownloadError) -> SourceAddress {
        if hasS3Scheme(text) {
            throw DownloadError(.unsupportedScheme, "\(Redaction.url(text)): an s3:// URL cannot be used here (expected http:// or https://)", url: text)
        }
        return Self(text: text, kind: .http(try httpParts(text, expected: "http:// or https://")))
    }

    private init(text: String, kind: Kind) {
        self.text = text
        self.kind = kind
    }

    /// Whether it names something in S3.
    public var isS3: Bool { s3 != nil }

    /// The S3 location, for an `s3://` address.
    public var s3: S3Location? {
        if case .s3(let location) = kind { return location }
        return nil
    }

    /// Whether it names an S3 prefix (every object under it) rather than one file.
    public var isPrefix: Bool { s3?.isPrefix ?? false }

    /// The URL's parts, for an HTTP(S) address.
    public var http: URLParts? {
        if case .http(let parts) = kind { return parts }
        return nil
    }

    /// The URL a journal names the download by, where it is not the URL requested: the
    /// `s3://` text (requested at its endpoint's URL); `nil` for HTTP(S).
    public var journalURL: String? { isS3 ? text : nil }

    /// `scheme://host:port` of an HTTP(S) address (what a per-host limit counts); `nil` for S3,
    /// whose origin is its endpoint's.
    public var origin: String? { http?.origin }

    /// Whether `text` names a local metalink file (``Metalink``) rather than a URL: no
    /// `scheme://`, and a name ending in `.meta4` or `.metalink` (any case).
    public static func isMetalinkFile(_ text: String) -> Bool {
        // Bytes, not Characters: asked of every line of a list.
        let bytes = text.utf8
        var previous: (UInt8, UInt8) = (0, 0)
        for byte in bytes {
            if previous == (UInt8(ascii: ":"), UInt8(ascii: "/")) && byte == UInt8(ascii: "/") { return false }
            previous = (previous.1, byte)
        }
        let lowered = { (suffix: String) in
            bytes.count >= suffix.utf8.count
                && zip(bytes.suffix(suffix.utf8.count), suffix.utf8).allSatisfy { ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 }
        }
        return lowered(".meta4") || lowered(".metalink")
    }

    /// The S3 location `text` names when it is an `s3://` URL with a bucket (what ``s3`` of its
    /// address would be), told without parsing anything else: a name is found for every line
    /// of a list (``NameSource/nameFromURL(_:)``).
    public static func s3Location(_ text: String) -> S3Location? {
        guard hasS3Scheme(text) else { return nil }
        let location = S3Location(bucketAndKey: text.dropFirst(s3Prefix.count))
        return location.bucket.isEmpty ? nil : location
    }

    // MARK: Parsing

    private static let s3Prefix = "s3://"

    private static func hasS3Scheme(_ text: String) -> Bool {
        // Bytes, not Characters: every line of a list of millions is asked.
        (text.utf8.first == UInt8(ascii: "s") || text.utf8.first == UInt8(ascii: "S")) && text.utf8.dropFirst().starts(with: "3://".utf8)
    }

    /// An absolute http(s) URL with a host, split by libcurl (so what is accepted here is what
    /// a transfer accepts).
    private static func httpParts(_ text: String, expected: String) throws(DownloadError) -> URLParts {
        // Redacted only for a message: scrubbing every URL of a list of millions costs seconds.
        var shown: String { Redaction.url(text) }
        if let plain = PlainURL(text) { return plain.parts }
        guard let marker = text.firstRange(of: "://"), !text[..<marker.lowerBound].isEmpty,
              text[..<marker.lowerBound].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else {
            throw DownloadError(.invalidURL, "\(shown): not a URL (expected \(expected))", url: text)
        }
        let scheme = text[..<marker.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw DownloadError(.unsupportedScheme, "\(shown): unsupported scheme '\(scheme)' (expected \(expected))", url: text)
        }
        guard let parts = URLParts(text), !parts.host.isEmpty else {
            throw DownloadError(.invalidURL, "\(shown): malformed URL (expected \(expected) followed by a host)", url: text)
        }
        return parts
    }
}
