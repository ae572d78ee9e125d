/// Where a batch's entries come from: entries given up front, then a list streamed line by line
/// (``ManifestReader``), so the first file starts while a list of millions is still being read.
public struct BatchInput: Sendable {
    /// Entries given up front (URLs on a command line), downloaded first.
    public var entries: [BatchEntry]
    /// A list to stream after ``entries`` (``Manifest``'s format; `-`: standard input), or `nil`.
    public var listPath: String?
    /// Only this shard's entries are downloaded; every entry is still checked (syntax, distinct
    /// paths), so every machine refuses the same list.
    public var shard: ShardSelector?
    /// A checksum file's text (`sha256sum` format): an entry without a digest of its own takes the
    /// line naming its file, if any.
    public var checksumList: String?

    /// Entries to download, then optionally a list to stream.
    public init(entries: [BatchEntry] = [], listPath: String? = nil, shard: ShardSelector? = nil,
                checksumList: String? = nil) {
        self.entries = entries
        self.listPath = listPath
        self.shard = shard
        self.checksumList = checksumList
    }
}
