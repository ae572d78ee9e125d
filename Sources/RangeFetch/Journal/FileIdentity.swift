/// What a journal knows a remote file by: the URL the user asked for (as the journal names it:
/// an `s3://` URL rather than its endpoint) and the version the server described, its size and
/// validators. Made from a probe's answer (`RemoteFile.identity`); a journal is trusted only for
/// the same identity (``JournalRecord/matches(_:)``).
struct FileIdentity: Sendable, Equatable {
    /// The URL the user asked for.
    var url: String
    /// Length in bytes, when the server sent one.
    var size: Int64?
    /// Entity tag, as sent.
    var etag: String?
    /// `Last-Modified`, as sent.
    var lastModified: String?
}
