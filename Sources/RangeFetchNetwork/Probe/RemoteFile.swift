import RangeFetchBase

/// What the server says about a file before any range is fetched.
public struct RemoteFile: Sendable, Equatable, Codable {
    /// The URL the user asked for.
    public var url: String
    /// Where the probe's redirects ended, when they led away from ``url`` (`nil`: no redirect).
    /// What the probe was told, not where requests go: that is the download's `Source`'s to
    /// say (a signed target expires and is resolved afresh; mirrors have URLs of their own).
    public var redirectedTo: String?
    /// Length in bytes, when the server sent one for the unencoded body.
    public var size: Int64?
    /// Whether the server serves byte ranges (`Accept-Ranges: bytes` or a 206 answer).
    public var acceptsRanges: Bool
    /// Entity tag, as sent (with quotes, possibly `W/`).
    public var etag: String?
    /// `Last-Modified`, as sent.
    public var lastModified: String?
    /// A safe file name for the download: the URL's last segment, or the server's when asked
    /// (``DownloadOptions/nameSource``).
    public var suggestedName: String
    /// Digests the server advertised for the whole file (`Repr-Digest`, `Digest`, `Content-MD5`,
    /// S3's whole-object `x-amz-checksum-*`).
    public var advertisedDigests: [AdvertisedDigest]
    /// The content coding (lower-case, e.g. `gzip`) the server applied although the probe asked
    /// for identity; such a body is fetched as one stream and decoded. `nil`: none.
    public var contentEncoding: String? = nil
    /// Checksums the server advertised that are not digests of the file: an S3 multipart
    /// object's composite checksums (checksums of its parts' checksums). Verified part by part
    /// where the parts' sizes are known (``CompositeChecksum/partSizes``).
    public var compositeChecksums: [CompositeChecksum]? = nil
    /// Other URLs of the same file its `Link: <URL>; rel=duplicate` headers name (Metalink/HTTP,
    /// RFC 6249): tried as mirrors, under the same agreement rules as those given.
    public var duplicates: [String] = []
    /// Duplicates named past `LinkHeader.maximumDuplicates`: backups, each checked only when
    /// an agreed mirror is dropped (see `DownloadOptions.backupMirrors`).
    public var backupDuplicates: [String] = []
    /// The metalink its `Link: <URL>; rel=describedby; type="application/metalink4+xml"` header
    /// names (RFC 6249), if any.
    public var describedBy: String? = nil

    /// Notes owed to the user for composite checksums that cannot be checked: the parts' sizes
    /// are unknown, or (`streaming`) the file is not kept to be read again.
    public func compositeChecksumWarnings(streaming: Bool = false) -> [DownloadWarning] {
        (compositeChecksums ?? []).filter { streaming || $0.partSizes == nil }.map {
            .checksumNotWholeFile(url: Redaction.url(Source(remote: self).requestURL), header: $0.header, parts: $0.parts)
        }
    }

    /// The warning owed to the user when the server encodes the file: what lands is the decoded
    /// body, fetched as one stream of unknown length. `nil` when the server sent identity.
    public var decodingWarning: DownloadWarning? {
        contentEncoding.map { .decodedStream(url: Redaction.url(Source(remote: self).requestURL), coding: $0) }
    }

    /// Whether the file can be fetched as parallel ranges.
    public var isSegmentable: Bool { acceptsRanges && size != nil }

    /// The validator to send with `If-Range`: a strong ETag, else Last-Modified.
    package var ifRangeValidator: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }

    /// The file as a journal knows it: its URL, size and validators.
    package var identity: FileIdentity {
        FileIdentity(url: url, size: size, etag: etag, lastModified: lastModified)
    }

    /// Whether `other` describes the same version of the file (size and validators).
    public func isSameVersion(as other: RemoteFile) -> Bool {
        size == other.size && etag == other.etag && lastModified == other.lastModified
    }

    package init(url: String, redirectedTo: String? = nil, size: Int64? = nil, acceptsRanges: Bool, etag: String? = nil, lastModified: String? = nil, suggestedName: String, advertisedDigests: [AdvertisedDigest], contentEncoding: String? = nil, compositeChecksums: [CompositeChecksum]? = nil, duplicates: [String] = [], backupDuplicates: [String] = [], describedBy: String? = nil) {
        self.url = url
        self.redirectedTo = redirectedTo
        self.size = size
        self.acceptsRanges = acceptsRanges
        self.etag = etag
        self.lastModified = lastModified
        self.suggestedName = suggestedName
        self.advertisedDigests = advertisedDigests
        self.contentEncoding = contentEncoding
        self.compositeChecksums = compositeChecksums
        self.duplicates = duplicates
        self.backupDuplicates = backupDuplicates
        self.describedBy = describedBy
    }
}

/// A digest a server advertised for the complete file.
public struct AdvertisedDigest: Sendable, Equatable, Codable {
    /// The digest's algorithm.
    public var algorithm: DigestAlgorithm
    /// Lower-case hex.
    public var hex: String
    /// The header it came from, for messages.
    public var header: String

    package init(algorithm: DigestAlgorithm, hex: String, header: String) {
        self.algorithm = algorithm
        self.hex = hex
        self.header = header
    }
}

