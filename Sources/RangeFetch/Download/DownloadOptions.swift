import RangeFetchBase
import RangeFetchNetwork

/// Everything that shapes one download. Defaults suit a fast, careful download.
public struct DownloadOptions: Sendable {
    /// Where the file goes.
    public enum Destination: Sendable, Equatable {
        /// Exactly this path.
        case file(String)
        /// This directory, under the name ``DownloadOptions/nameSource`` gives.
        case directory(String)
        /// This process's standard output, in order (``streamWindowBytes``): no partial file,
        /// no journal, so no resume.
        case standardOutput
    }

    /// What to do with a partial download left by an earlier run.
    public enum ResumePolicy: Sendable, Equatable {
        /// Continue where it stopped when the server still serves the same version.
        case resume
        /// Discard it and start over.
        case restart
    }

    /// What to do with a file already at the final path that no journal describes.
    public enum ExistingFilePolicy: Sendable, Equatable {
        /// Report it complete when its size (and checksum, if given) match; otherwise stop.
        case refuse
        /// Replace it.
        case overwrite
        /// Treat its bytes as the beginning of the download (like `curl -C -`).
        case continueFrom
    }

    /// How many connections a download uses.
    public enum ConnectionCount: Sendable, Equatable, ExpressibleByIntegerLiteral {
        /// Start with a few and add more while the aggregate speed still grows (a per-connection
        /// cap shows as linear growth), up to ``DownloadOptions/maximumConnections``.
        case automatic
        /// Exactly this many at most.
        case fixed(Int)

        /// `.fixed(value)`.
        public init(integerLiteral value: Int) { self = .fixed(value) }
    }

    /// When a connection is replaced by a fresh one for its next range (``RangeFetch/ConnectionRecycling``).
    public typealias ConnectionRecycling = RangeFetch.ConnectionRecycling

    /// Allowed values for a fixed ``connections`` count and for ``maximumConnections``.
    public static let connectionRange = 1...64
    /// Smallest allowed ``minimumSegmentBytes``.
    public static let smallestSegmentBytes: Int64 = 16 * 1024

    /// Where the file goes: by default the current directory, under the URL's name.
    public var destination: Destination = .directory(".")
    /// Where the name of a file saved into a directory comes from: by default the URL's last
    /// segment; ``NameSource/server`` trusts `Content-Disposition` and redirects (made safe).
    public var nameSource: NameSource = .givenURL
    /// Whether a symbolic link at a ``Destination/file(_:)`` path is followed (the file it points
    /// to gets the bytes and the link stays): true for a path the user typed. A batch sets it
    /// false for names from a list, where a link is an error; a name the server chose
    /// (``Destination/directory(_:)``) is never followed.
    public var followsLinkAtOutputPath = true
    /// Parallel connections (ranges in flight): adaptive by default.
    public var connections: ConnectionCount = .automatic
    /// Upper bound for ``ConnectionCount/automatic``: the per-origin ceiling. Behind a
    /// per-connection cap (CDNs, object stores) `auto` keeps doubling while each step still
    /// pays, so a 6 MiB/s cap on a fast path needs 64; a path without a cap stays at a few.
    public var maximumConnections = 64
    /// No range is planned below this size, so small files get fewer connections.
    public var minimumSegmentBytes: Int64 = 1 << 20
    /// A busy range is cut for an idle connection only when the new part is at least this long
    /// (and the cut brings the end forward by a few set-up times, so on a fast link cuts stay
    /// large). Small, so that near the end of a slow link's download every connection keeps
    /// working: with 1 MiB the last 0.5 s of a 20 ms, 0.1%-loss WAN ran on ever fewer connections.
    public var minimumSplitBytes: Int64 = 128 << 10
    /// When a connection is replaced by a fresh one for its next range.
    public var recycleConnections: ConnectionRecycling = .afterLoss
    /// Headers, credentials, TLS, proxies and timeouts of every request.
    public var request = RequestOptions()
    /// How failed requests are retried.
    public var retry = RetryPolicy()
    /// What to do with a partial download from an earlier run.
    public var resume: ResumePolicy = .resume
    /// What to do with a file already at the final path.
    public var existingFile: ExistingFilePolicy = .refuse
    /// Digests the file must match before it is moved into place.
    public var checksums: [DigestValue] = []
    /// The size the file must have (a metalink's `<size>`): a main URL of another size fails
    /// the download as a checksum mismatch, before any byte is fetched.
    public var expectedSize: Int64?
    /// Digests of the file's consecutive pieces (a metalink's `<pieces>`): once every byte has
    /// landed each piece is checked, and one that does not match is fetched again (only it),
    /// its mirror dropped. Checked on files fetched as ranges of a known size.
    public var pieceDigests: Metalink.Pieces?
    /// Verify digests the server advertises (`Repr-Digest`, `Digest`, `Content-MD5`, S3's
    /// whole-object `x-amz-checksum-*`).
    public var verifyAdvertisedDigests = true
    /// Keep a crash-safe resume journal. Off only to measure what it costs.
    public var journal = true
    /// Seconds between journal checkpoints.
    public var checkpointIntervalSeconds: Double = 1
    /// Per-connection coalescing buffer between libcurl and `pwrite`, in bytes.
    public var writeBufferBytes = 256 << 10
    /// Streaming to standard output, a pipe or a device: how far ahead of what the reader has
    /// taken ranges may arrive, in bytes. Connections that run ahead wait; the bytes between
    /// wait in a spool file with no name (in `$TMPDIR`, else `/var/tmp`), not in memory.
    public var streamWindowBytes: Int64 = 64 << 20
    /// Other URLs of the same file (mirrors). Ranges are spread over every source by its
    /// measured speed; a source must first agree with the main URL (same size, the same bytes at
    /// sampled offsets), and one that disagrees, fails or is far slower is dropped with a warning.
    public var mirrors: [String] = []
    /// More URLs of the same file, held back: one is checked (as ``mirrors`` are) only when an
    /// agreed mirror is dropped, in place of it. A metalink's URLs past
    /// ``Metalink/maximumLocations`` go here.
    public var backupMirrors: [String] = []
    /// Connections to any one origin (scheme, host, port) at once: with mirrors on other hosts,
    /// a download may open this many to each. By default no limit beyond the connection count
    /// (a batch applies ``BatchOptions/maximumConnectionsPerHost``).
    public var maximumConnectionsPerHost = DownloadOptions.connectionRange.upperBound
    /// How `s3://` URLs are reached and signed; `nil`: read from the environment and
    /// `~/.aws` when an `s3://` URL is downloaded (``S3Configuration/load(unsigned:)``).
    public var s3: S3Configuration?
    /// Digests to compute over a stream's bytes as they go out, returned in
    /// ``DownloadSummary/digests`` (a stream leaves no file to hash afterwards).
    public var streamDigests: [DigestAlgorithm] = []
    /// Smallest allowed ``streamWindowBytes``.
    public static let smallestStreamWindowBytes: Int64 = 1 << 20

    /// The most connections this download may open.
    public var connectionLimit: Int {
        switch connections {
        case .automatic: maximumConnections
        case .fixed(let count): count
        }
    }

    /// Up to this many connections, `auto` plans its ranges (piece size, stream pieces) as for
    /// its ceiling; past it, as for this many. Pieces for 64 connections would cost every
    /// download a request per 4 MiB (about 7% over 16 capped connections), and connections
    /// that `auto` adds past 16 get their work by cutting busy ranges anyway.
    static let adaptivePlanningConnections = 16

    /// The connection count ranges are planned for: a fixed count, or for `auto` its ceiling
    /// up to ``adaptivePlanningConnections``.
    var planningConnections: Int {
        switch connections {
        case .automatic: min(maximumConnections, Self.adaptivePlanningConnections)
        case .fixed(let count): count
        }
    }

    /// The defaults, which suit a fast, careful download.
    public init() {}

    /// Checks option values; throws a usage error naming the bad one.
    public func validate() throws(DownloadError) {
        if case .fixed(let count) = connections, !Self.connectionRange.contains(count) {
            throw DownloadError(.invalidOption, "connections must be between 1 and 64 (got \(count))")
        }
        guard Self.connectionRange.contains(maximumConnections) else {
            throw DownloadError(.invalidOption, "maximum connections must be between 1 and 64 (got \(maximumConnections))")
        }
        guard minimumSegmentBytes >= Self.smallestSegmentBytes, minimumSplitBytes >= Self.smallestSegmentBytes else {
            throw DownloadError(.invalidOption, "minimum segment size must be at least 16K (got \(min(minimumSegmentBytes, minimumSplitBytes)) bytes)")
        }
        guard retry.maximumTries >= 1, retry.maximumTries <= 100 else {
            throw DownloadError(.invalidOption, "max tries must be between 1 and 100 (got \(retry.maximumTries))")
        }
        guard retry.baseDelaySeconds >= 0, retry.baseDelaySeconds <= 600 else {
            throw DownloadError(.invalidOption, "retry wait must be between 0 and 600 seconds")
        }
        if let limit = request.maximumBytesPerSecond, limit < 1024 {
            throw DownloadError(.invalidOption, "max speed must be at least 1K per second (got \(limit))")
        }
        guard request.connectTimeoutSeconds >= 1 else {
            throw DownloadError(.invalidOption, "connect timeout must be at least 1 second")
        }
        guard maximumConnectionsPerHost >= 1 else {
            throw DownloadError(.invalidOption, "connections per host must be at least 1 (got \(maximumConnectionsPerHost))")
        }
        guard streamWindowBytes >= Self.smallestStreamWindowBytes else {
            throw DownloadError(.invalidOption, "stream window must be at least 1M (got \(streamWindowBytes) bytes)")
        }
        guard checkpointIntervalSeconds > 0, writeBufferBytes >= 16 * 1024 else {
            throw DownloadError(.invalidOption, "checkpoint interval and write buffer must be positive")
        }
    }
}

extension DownloadOptions {
    /// These options with connection counts no larger than a shared budget of `total`
    /// connections, `perHost` to one host, allows one file (a batch's, a queue's). Each source
    /// of a file is capped per host; mirrors on other hosts add connections.
    func within(total: Int, perHost: Int) -> DownloadOptions {
        var options = self
        let cap = min(total, perHost * (1 + mirrors.count))
        options.maximumConnections = min(maximumConnections, cap)
        options.maximumConnectionsPerHost = min(maximumConnectionsPerHost, perHost)
        if case .fixed(let count) = connections { options.connections = .fixed(min(count, cap)) }
        return options
    }
}
