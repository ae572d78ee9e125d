/// Something odd that did not stop a download, as a case a front end can switch on; ``message``
/// words it for people. URLs in it are redacted (no password, token or signature).
public enum DownloadWarning: Sendable, Equatable {
    /// The file changed on the server (`reason`): the download starts again as its new version,
    /// for the `restart`th time of at most `of`.
    case restartingChangedFile(reason: String, restart: Int, of: Int)
    /// The server applies the content coding `coding` although identity was asked for: the file
    /// is fetched as one stream and saved decoded.
    case decodedStream(url: String, coding: String)
    /// The server cannot serve parallel ranges (it `why`, e.g. "does not say the file's size"):
    /// one stream on one connection, and an interruption starts it over.
    case oneStream(url: String, why: String)
    /// Ranges stopped working during the download (`reason`): the rest comes as one stream.
    case rangesAbandoned(reason: String)
    /// A file already at the final path is continued: its first `bytes` are kept.
    case continuingExistingFile(bytes: Int64, path: String)
    /// The partial file cannot be resumed (`reason`): the download starts over.
    case startingOver(reason: String)
    /// A mirror's bytes at `range` differ from the main URL's: it is dropped, and its `ranges`
    /// ranges (`bytes` bytes) are fetched again.
    case mirrorDistrusted(url: String, range: ByteRange, ranges: Int, bytes: Int64)
    /// Mirrors were given, but the main URL serves no byte ranges: they are not used.
    case mirrorsUnusedWithoutRanges(url: String)
    /// The main URL's bytes that mirrors are compared with could not be read: mirrors not used.
    case mirrorsUnusedWithoutReference(url: String)
    /// A mirror is left out before the download starts (`why`).
    case mirrorLeftOut(url: String, why: String)
    /// Mirrors are used but no checksum proves their bytes: each range they send is only
    /// spot-checked against the main URL.
    case mirrorsSpotCheckedOnly
    /// The main URL is https and the mirror `url` (given, or named by a `Link: rel=duplicate`
    /// header) is plain http: its bytes cross the network unencrypted and unauthenticated.
    case plainHTTPMirror(url: String)
    /// The https URL `url` redirected to the plain http URL `target` (both redacted): the file
    /// crosses the network unencrypted and unauthenticated.
    case redirectedToPlainHTTP(url: String, target: String)
    /// A slow connection for `range` was replaced by a fresh one: routine (see ``isRoutine``).
    case slowConnectionReplaced(range: ByteRange, bytesPerSecond: Double)
    /// A server sent more bytes than the range it announced; the excess was discarded.
    case overlongResponse(url: String, range: ByteRange?)
    /// Servers disagree on the ETag (`probed`, `seen`) while size and Last-Modified agree: the
    /// file is judged by size and date from then on.
    case etagsDisagree(url: String, probed: String, seen: String)
    /// A redirect target refused a request (HTTP `status`, the server's `serverSaid`) as an
    /// expired signed URL does: the URL is followed again for a fresh one.
    case reResolvingRedirect(url: String, status: Int, serverSaid: String?)
    /// The server refused connections (`how`: `HTTP 503`, `connection refused or reset`): at most
    /// `connections` from now on.
    case fewerConnections(url: String, how: String, connections: Int)
    /// A source (the main URL, `isMain`, or a mirror) is no longer used, for `reason`.
    case sourceDropped(url: String, isMain: Bool, reason: String)
    /// TLS certificates are not checked.
    case certificatesUnchecked
    /// The server's checksum in `header` is not of the whole file (an S3 multipart upload's
    /// composite checksum over `parts` parts) and the parts' sizes are unknown, or the file is
    /// streamed: it is not verified. Routine (see ``isRoutine``).
    case checksumNotWholeFile(url: String, header: String, parts: Int?)
    /// The bytes `url` sent for `range` do not match the response's own `Content-Digest`: they
    /// were thrown away and the range is fetched again (of another source when there is one).
    case contentDigestMismatch(url: String, range: ByteRange)
    /// The batch journal at `path` is not used (`reason`): complete files are checked with their
    /// servers, and finished ones are not recorded.
    case batchJournalUnused(path: String, reason: String)
    /// A piece of the file (a metalink's `<pieces>`) does not match its digest; `url` (redacted)
    /// is the source that sent bytes of it (the main URL when no mirror did). It is fetched again.
    case pieceMismatch(url: String, piece: Int, range: ByteRange)
    /// Bytes of the partial file at `path` that its journal claims are written do not match the
    /// CRC-32C the journal recorded for them (`blocks` blocks differ), or have none: `bytes` bytes
    /// are fetched again.
    case resumedBytesRefused(path: String, bytes: Int64, blocks: Int)
    /// Part of a metalink was left out (a `file:` or `ftp:` URL, a hash type we do not compute):
    /// routine; `note` says what and why.
    case metalinkEntryIgnored(note: String)
    /// The metalink a server's `Link: rel=describedby` header names could not be used (`url`
    /// redacted); the download goes on without it.
    case describedByMetalinkUnused(url: String, why: String)

    /// Routine events a front end shows only when asked for detail.
    public var isRoutine: Bool {
        switch self {
        case .slowConnectionReplaced, .checksumNotWholeFile, .metalinkEntryIgnored: true
        default: false
        }
    }

    /// The warning in words, one line.
    public var message: String { Redaction.text(words) }

    private var words: String {
        switch self {
        case .restartingChangedFile(let reason, let restart, let most):
            "\(reason); downloading the new version from the start (restart \(restart) of \(most))"
        case .decodedStream(let url, let coding):
            "\(url): server sends the file with Content-Encoding \(coding) even when asked for identity; fetching it as one stream and saving the decoded bytes"
        case .oneStream(let url, let why):
            "\(url): the server \(why), so the download is one stream on one connection, and an interruption starts it over"
        case .rangesAbandoned(let reason):
            "\(reason); downloading as one stream"
        case .continuingExistingFile(let bytes, let path):
            "continuing from the \(bytes) bytes already in \(path)"
        case .startingOver(let reason):
            "\(reason); starting over"
        case .mirrorDistrusted(let url, let range, let ranges, let bytes):
            "mirror \(url) dropped: the bytes it sent at \(range.httpRangeSpec) differ from the main URL's; its \(ranges) range\(ranges == 1 ? "" : "s") (\(ByteCount.format(bytes))) are fetched again"
        case .mirrorsUnusedWithoutRanges(let url):
            "\(url) serves no byte ranges: its mirrors are not used"
        case .mirrorsUnusedWithoutReference(let url):
            "\(url): could not read the bytes mirrors are compared with; the mirrors are not used"
        case .mirrorLeftOut(let url, let why):
            "mirror \(url) left out: \(why)"
        case .mirrorsSpotCheckedOnly:
            "no checksum to prove the mirrors' bytes: each range they send is spot-checked against the main URL, which catches a mirror sending other ranges but not one changing a few bytes"
        case .slowConnectionReplaced(let range, let bytesPerSecond):
            "connection for bytes \(range.httpRangeSpec) was slow (\(ByteCount.format(Int64(bytesPerSecond)))/s on average); a fresh connection took over"
        case .overlongResponse(let url, let range):
            "\(url): server sent more bytes than the range \(range?.httpRangeSpec ?? "") it announced; the excess was discarded"
        case .etagsDisagree(let url, let probed, let seen):
            "\(url): servers disagree on the ETag (\(probed) and \(seen)) while size and Last-Modified agree; judging the file by size and Last-Modified, and sending If-Range by date"
        case .reResolvingRedirect(let url, let status, let said):
            "\(url): the redirect target refused a request (HTTP \(status)\(said.map { ", server said \($0)" } ?? "")), as an expired signed URL does; following the URL again for a fresh one"
        case .fewerConnections(let url, let how, let connections):
            "\(url): server refused connections (\(how)); continuing with at most \(connections) connection\(connections == 1 ? "" : "s")"
        case .sourceDropped(let url, let isMain, let reason):
            "\(isMain ? "main URL" : "mirror") \(url) dropped: \(reason)"
        case .contentDigestMismatch(let url, let range):
            "\(url): the bytes it sent for \(range.httpRangeSpec) do not match their Content-Digest; they were discarded and the range is fetched again"
        case .describedByMetalinkUnused(let url, let why):
            "the metalink \(url) the server links to is not used: \(why)"
        case .plainHTTPMirror(let url):
            "mirror \(url) is plain http while the main URL is https: its bytes travel unencrypted and are only spot-checked against the main URL (give --checksum to prove them)"
        case .redirectedToPlainHTTP(let url, let target):
            "\(url) redirected to plain http (\(target)): the file travels unencrypted and unauthenticated (give --checksum to prove it)"
        case .resumedBytesRefused(let path, let bytes, let blocks):
            "\(path): \(ByteCount.format(bytes)) its journal claims as written \(blocks > 0 ? "do not match the checksums recorded for them (\(blocks) block\(blocks == 1 ? "" : "s") differ)" : "have no checksum recorded"); they are fetched again"
        case .metalinkEntryIgnored(let note):
            "metalink: \(note)"
        case .pieceMismatch(let url, let piece, let range):
            "\(url): piece \(piece) (bytes \(range.httpRangeSpec)) does not match the metalink's piece digest; it is fetched again"
        case .certificatesUnchecked:
            "TLS certificates are not checked: anyone on the network path can read or change what is downloaded"
        case .checksumNotWholeFile(let url, let header, let parts):
            "\(url): \(header) is a checksum of \(parts.map { "the \($0) parts' checksums" } ?? "the parts' checksums") of a multipart upload, not a digest of the whole file; it was not checked"
        case .batchJournalUnused(let path, let reason):
            "batch journal \(path) not used (\(reason)): complete files are checked with their servers, and finished files are not recorded for the next run"
        }
    }

    /// A short, stable name for scripts (`--json`'s `kind`), e.g. `slow_connection_replaced`.
    public var kind: String {
        switch self {
        case .restartingChangedFile: "restarting_changed_file"
        case .decodedStream: "decoded_stream"
        case .oneStream: "one_stream"
        case .rangesAbandoned: "ranges_abandoned"
        case .continuingExistingFile: "continuing_existing_file"
        case .startingOver: "starting_over"
        case .mirrorDistrusted: "mirror_distrusted"
        case .mirrorsUnusedWithoutRanges: "mirrors_unused_without_ranges"
        case .mirrorsUnusedWithoutReference: "mirrors_unused_without_reference"
        case .mirrorLeftOut: "mirror_left_out"
        case .mirrorsSpotCheckedOnly: "mirrors_spot_checked_only"
        case .slowConnectionReplaced: "slow_connection_replaced"
        case .overlongResponse: "overlong_response"
        case .etagsDisagree: "etags_disagree"
        case .reResolvingRedirect: "re_resolving_redirect"
        case .fewerConnections: "fewer_connections"
        case .sourceDropped: "source_dropped"
        case .certificatesUnchecked: "certificates_unchecked"
        case .checksumNotWholeFile: "checksum_not_whole_file"
        case .contentDigestMismatch: "content_digest_mismatch"
        case .batchJournalUnused: "batch_journal_unused"
        case .pieceMismatch: "piece_mismatch"
        case .resumedBytesRefused: "resumed_bytes_refused"
        case .metalinkEntryIgnored: "metalink_entry_ignored"
        case .describedByMetalinkUnused: "described_by_metalink_unused"
        case .plainHTTPMirror: "plain_http_mirror"
        case .redirectedToPlainHTTP: "redirected_to_plain_http"
        }
    }
}
