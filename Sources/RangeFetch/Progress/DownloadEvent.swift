import RangeFetchBase
import RangeFetchNetwork

/// What a download reports while it runs, in order: `probed`, `started`, then any number of
/// `progress`, `retrying` and `warning`, then `verified` for each digest checked, then
/// `finished` (on failure the download throws instead).
public enum DownloadEvent: Sendable {
    case probed(RemoteFile)
    case started(DownloadStart)
    case progress(DownloadProgress)
    case retrying(RetryNotice)
    case warning(DownloadWarning)
    /// A request ended (finished or failed); for detailed listings, at most one per request.
    case requestEnded(RequestEnd)
    case verified(DigestValue, source: String)
    case finished(DownloadSummary)
}

/// The moment transfers begin.
public struct DownloadStart: Sendable, Equatable {
    /// The final path the file will have.
    public var path: String
    /// Total bytes, when known.
    public var totalBytes: Int64?
    /// Bytes already on disk from an earlier run.
    public var resumedBytes: Int64
    /// Segments in the initial plan (1 for a single stream).
    public var segments: Int
    /// Connections allowed at once (the upper bound when adaptive).
    public var connections: Int
    /// Whether ranges are fetched in parallel (`false`: one plain stream).
    public var segmented: Bool
    /// Whether the connection count adapts while the download runs (`-n auto`).
    public var adaptive: Bool = false
}

/// A progress report, at most a few per second.
public struct DownloadProgress: Sendable, Equatable {
    /// Bytes of the file received so far, including any resumed prefix.
    public var receivedBytes: Int64
    /// The file's size, when known.
    public var totalBytes: Int64?
    /// Speed over the last few seconds in bytes per second, counting only bytes of this run.
    public var bytesPerSecond: Double
    /// Estimated seconds to completion, when the total and a speed are known.
    public var etaSeconds: Double?
    /// Requests in flight.
    public var activeConnections: Int
    /// Connections the scheduler allows now: the adaptive count as it grows, else the fixed one.
    public var targetConnections: Int = 0
    /// Open TCP connections carrying the active requests (one request each: HTTP/2 streams are
    /// not multiplexed onto shared connections).
    public var tcpConnections: Int = 0
    /// The HTTP version the server answers with (`h1.1`, `h2`), once a response arrived.
    public var httpVersion: String?

    /// Completed fraction in `0...1`, when the total is known.
    public var fraction: Double? {
        guard let totalBytes else { return nil }
        return totalBytes == 0 ? 1 : Double(receivedBytes) / Double(totalBytes)
    }
}

/// The outcome of a successful download.
public struct DownloadSummary: Sendable, Equatable {
    /// Where the complete file is.
    public var path: String
    /// The file's size.
    public var bytes: Int64
    /// Bytes fetched by this run (excludes the resumed prefix).
    public var transferredBytes: Int64
    /// Bytes that were already on disk from an earlier run.
    public var resumedBytes: Int64
    /// Seconds from the probe to the file in place.
    public var elapsedSeconds: Double
    /// Digests that were checked and matched.
    public var verified: [DigestValue]
    /// The file was already complete; nothing was fetched.
    public var alreadyComplete: Bool
    /// Whether ranges were fetched in parallel.
    public var segmented: Bool
    /// Seconds from the last byte written to every digest checked, including the final
    /// `fdatasync` (`nil` when no digest was checked).
    public var verificationSeconds: Double?
    /// The bytes went to a stream (standard output, a pipe, a device), not into a file at ``path``.
    public var streamed = false
    /// A stream's digests of ``DownloadOptions/streamDigests`` (a stream leaves no file to hash later).
    public var digests: [DigestValue] = []
    /// A stream's time to its first byte: seconds from the start (the probe included) to the
    /// first byte its output took (`nil`: not a stream, or nothing was sent).
    public var firstByteSeconds: Double?

    /// Average speed of this run in bytes per second.
    public var bytesPerSecond: Double {
        elapsedSeconds > 0 ? Double(transferredBytes) / elapsedSeconds : 0
    }
}
