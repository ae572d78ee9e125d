/// The resume record kept beside a partial file: which file this is and how much of each
/// segment is durably on disk. See `docs/journal-format.md`.
struct JournalRecord: Sendable, Equatable, Codable {
    /// Format version; a reader refuses versions it does not know.
    static let currentVersion = 1

    var version: Int = JournalRecord.currentVersion
    /// The URL the user asked for (the identity of the download), redacted: no password or
    /// signature reaches the disk (``Redaction``).
    var url: String
    /// Kept for the format's sake and always equal to ``url``: a resolved URL may carry a
    /// signature that expires (a resume re-resolves from ``url``) or a secret.
    var finalURL: String
    var size: Int64
    var etag: String?
    var lastModified: String?
    /// The segments covering `[0, size)` exactly, in ascending order, with bytes written.
    var segments: [SegmentState]
    /// Bytes that mirrors delivered and that were not yet spot-checked against the main URL
    /// (``MirrorSpotCheck``), by mirror URL (redacted): a resume checks them before the file is
    /// declared complete. Absent in journals without mirrors (and in older ones).
    var uncheckedMirrorBytes: [String: [ByteRange]]?

    init(remote: RemoteFile, size: Int64, segments: [SegmentState]) {
        url = Redaction.url(remote.url)
        finalURL = url
        self.size = size
        etag = remote.etag
        lastModified = remote.lastModified
        self.segments = segments
    }

    /// Bytes the record claims are on disk.
    var writtenBytes: Int64 { segments.writtenBytes }

    /// Whether `remote` is the same file, in the same version, this record describes.
    func matches(_ remote: RemoteFile) -> Bool {
        Redaction.url(remote.url) == url && remote.size == size && remote.etag == etag && remote.lastModified == lastModified
    }
}
