import RangeFetchBase
import RangeFetchNetwork

/// Where a batch's entries come from: entries given up front, then the objects of `s3://` prefixes
/// listed a page at a time, then a list streamed line by line (`ManifestReader`), so the first
/// file starts while a prefix or a list of millions is still being read, and memory does not grow
/// with either.
public struct BatchInput: Sendable {
    /// Entries given up front (URLs on a command line), downloaded first.
    public var entries: [BatchEntry]
    /// `s3://BUCKET/PREFIX/` URLs whose objects come next, as ``Downloader/s3Entries(_:)`` makes
    /// them, listed a page at a time (ListObjectsV2, 1,000 keys on S3) as files are taken.
    public var prefixes: [String]
    /// A list to stream after ``entries`` (``Manifest``'s format; `-`: standard input), or `nil`.
    public var listPath: String?
    /// Only this shard's entries are downloaded; every entry is still checked (syntax, distinct
    /// paths), so every machine refuses the same list.
    public var shard: ShardSelector?
    /// A checksum file's text (`sha256sum` format): an entry without a digest of its own takes the
    /// line naming its file, if any.
    public var checksumList: String?
    /// Keys a page of a prefix's listing asks for (`max-keys`); `nil`: the store's default.
    var listingPageSize: Int?

    /// Entries to download, then optionally the objects of prefixes, then a list to stream.
    public init(entries: [BatchEntry] = [], prefixes: [String] = [], listPath: String? = nil, shard: ShardSelector? = nil,
                checksumList: String? = nil) {
        self.entries = entries
        self.prefixes = prefixes
        self.listPath = listPath
        self.shard = shard
        self.checksumList = checksumList
    }
}
