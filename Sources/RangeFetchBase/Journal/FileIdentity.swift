/// What a journal knows a remote file by: the URL the user asked for (as the journal names it:
/// an `s3://` URL rather than its endpoint) and the version the server described, its size and
/// validators. Made from a probe's answer (`RemoteFile.identity`); a journal is trusted only for
/// the same identity (``JournalRecord/matches(_:)``).
package struct FileIdentity: Sendable, Equatable {
    /// The URL the user asked for.
    package var url: String
    /// Length in bytes, when the server sent one.
    package var size: Int64?
    /// Entity tag, as sent.
    package var etag: String?
    /// `Last-Modified`, as sent.
    package var lastModified: String?

    package init(url: String, size: Int64? = nil, etag: String? = nil, lastModified: String? = nil) {
        self.url = url
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }
}
