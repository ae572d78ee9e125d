import RangeFetchBase
import RangeFetchNetwork

/// Where a download starts, decided from what is on disk and what the server says, with no I/O:
/// the session reads the files' sizes, their trust and the journal, asks here, and carries out
/// the answer (reports, renames, truncates, plans).
///
/// Two questions, in the order a download meets them:
/// 1. ``finalFile(policy:path:existingBytes:trust:remote:)``: a file is already at the final
///    path and no partial beside it. Is it the download, complete? Are its bytes continued
///    from? Or is it replaced?
/// 2. ``partialFile(_:)``: which segments to fetch into the partial file, resuming its bytes
///    when the journal describes this very file in its version, else starting over and saying
///    why.
enum ResumeDecision {
    /// What becomes of a file already at the final path (with no partial file beside it).
    enum FinalFile: Equatable {
        /// It is this download, complete (its size is the server's): report it once its digests,
        /// if any, match.
        case complete(bytes: Int64)
        /// Its bytes become the partial file's prefix (``DownloadOptions/ExistingFilePolicy/continueFrom``).
        case adopt(prefixBytes: Int64)
        /// It is replaced (``DownloadOptions/ExistingFilePolicy/overwrite``).
        case replace
    }

    /// The answer for a file at `path` of `existingBytes` bytes (`nil`: its size could not be
    /// read), whose entry `FileTrust` judges `trust`, under `policy`.
    /// - Throws: ``DownloadError`` (`.outputExists`, or `.fileSystem` for a file that is not this
    ///   user's alone) when the file is neither this download nor may be continued from.
    static func finalFile(policy: DownloadOptions.ExistingFilePolicy, path: String, existingBytes: Int64?,
                          trust: FileTrust?, remote: RemoteFile) throws(DownloadError) -> FinalFile {
        switch policy {
        case .overwrite:
            return .replace
        case .refuse:
            let existing = existingBytes ?? -1
            // Someone else's file of the right size is not this download, whatever its bytes.
            if case .ownedBy = trust, let problem = trust?.problem(at: path) {
                throw DownloadError(.outputExists, "\(problem); it is not taken as this download", remedy: .removeStrayFile)
            }
            guard let size = remote.size, existing == size else {
                throw DownloadError(.outputExists, "\(path) already exists (\(existing) bytes; the server has \(remote.size.map(String.init) ?? "an unknown number of") bytes)", remedy: .continueOrOverwrite)
            }
            return .complete(bytes: size)
        case .continueFrom:
            let existing = existingBytes ?? 0
            guard remote.isSegmentable, let size = remote.size else {
                throw DownloadError(.outputExists, "\(path) exists and the server does not serve ranges, so it cannot be continued", remedy: .overwrite)
            }
            guard existing <= size else {
                throw DownloadError(.outputExists, "\(path) (\(existing) bytes) is larger than the file on the server (\(size) bytes)", remedy: .overwrite)
            }
            // Its bytes are taken only when they are this user's alone, like a partial file's.
            if let trust, trust != .own {
                throw DownloadError(.fileSystem(errno: trust.errno), "\(trust.problem(at: path) ?? path), so its bytes are not continued from", remedy: .removeStrayFile)
            }
            return .adopt(prefixBytes: existing)
        }
    }

    /// What is known when the partial file is open.
    struct Partial {
        /// The partial file's path, for messages.
        var path: String
        /// Its size in bytes now.
        var bytes: Int64
        /// Bytes at its start adopted from the final file (``FinalFile/adopt(prefixBytes:)``), 0 if none.
        var adoptedPrefixBytes: Int64 = 0
        /// The journal as read; `nil` when resuming was not asked for (it is not read then).
        var journal: JournalStore.Loaded?
        /// The file as the server describes it now.
        var remote: RemoteFile
        /// `remote` under the URL the journal names (an `s3://` URL rather than its endpoint).
        var identity: FileIdentity
        /// The file's size (`remote.size`, known: the download is in ranges).
        var size: Int64
        /// This run already found the file changed and said so: an old journal goes quietly.
        var restarting = false
        /// How a new plan is cut.
        var planner: SegmentPlanner
    }

    /// Which segments to fetch into the partial file.
    enum Start: Equatable {
        /// Keep the partial file's bytes and fetch the rest of `segments`; `uncheckedMirrorBytes`
        /// are the journal's mirror bytes still to be spot-checked.
        case resume([SegmentState], uncheckedMirrorBytes: [String: [ByteRange]])
        /// Discard the partial file's bytes (truncate it) and fetch `segments`, a new plan;
        /// `reason` is why its bytes were not used, owed to the user as a warning (`nil`: nothing
        /// worth saying).
        case startOver([SegmentState], reason: String?)
    }

    /// The segments to fetch: after an adopted prefix, a plan of the rest; the journal's when it
    /// names this very file, in this version, and the partial file has the file's size; else a
    /// new plan.
    static func partialFile(_ partial: Partial) -> Start {
        let size = partial.size
        if partial.adoptedPrefixBytes > 0 {
            let prefix = partial.adoptedPrefixBytes
            let rest = partial.planner.plan(size: size - prefix).map {
                SegmentState(range: ByteRange($0.lower + prefix, $0.upper + prefix))
            }
            return .resume([SegmentState(range: ByteRange(0, prefix), written: prefix)] + rest, uncheckedMirrorBytes: [:])
        }
        var reason: String?
        if let journal = partial.journal {
            let identity = partial.identity
            switch journal {
            case .record(let record) where record.matches(identity) && partial.bytes == size:
                return .resume(record.segments, uncheckedMirrorBytes: JournalRecord.heldMirrorBytes(record.uncheckedMirrorBytes ?? [:], in: record.segments))
            case .record(let record) where !record.names(identity):
                reason = "\(partial.path) belongs to a download of \(record.url), not \(partial.remote.url)"
            case .record(let record) where !record.matches(identity) && partial.restarting:
                break
            case .record(let record) where !record.matches(identity):
                reason = "the file on the server changed since the partial download (\(versionText(record.size, record.etag, record.lastModified)) → \(versionText(size, identity.etag, identity.lastModified)))"
            case .record:
                reason = "\(partial.path) is \(partial.bytes) bytes but its journal expects \(size)"
            case .unreadable(let problem):
                reason = "ignoring an unusable journal (\(problem))"
            case .missing:
                if partial.bytes > 0 && size >= DownloadSession.smallFileBytes {
                    reason = "\(partial.path) has no journal, so its bytes cannot be trusted"
                }
            }
        } else if partial.bytes > 0 {
            reason = "a restart was asked for"
        }
        return .startOver(partial.planner.plan(size: size).map { SegmentState(range: $0) }, reason: reason)
    }

    private static func versionText(_ size: Int64, _ etag: String?, _ lastModified: String?) -> String {
        "\(size) bytes" + (etag.map { ", ETag \($0)" } ?? "") + (lastModified.map { ", \($0)" } ?? "")
    }
}
