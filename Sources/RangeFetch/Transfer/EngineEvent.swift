/// Reports from the engine thread, delivered synchronously on it: keep handlers short.
enum EngineEvent: Sendable {
    case progress(EngineProgress)
    /// Segment states whose `written` bytes have all been passed to `pwrite`: a handler that
    /// `fdatasync`s the file and then records them keeps the journal truthful.
    case checkpoint([SegmentState], mirrorBytes: [String: [ByteRange]])
    /// A segment failed and will be retried.
    case retrying(RetryNotice)
    /// Something odd that did not stop the download.
    case warning(DownloadWarning)
    /// The prefix `[0, n)` is passed to `pwrite` (sent as writes complete, only for downloads
    /// with a ``EngineConfiguration/startLimit``: a stream follows it).
    case written(Int64)
    /// A request finished or failed (for `--verbose` listings).
    case requestEnded(RequestEnd)
}

/// Where a running download stands.
struct EngineProgress: Sendable {
    /// Bytes of the file received so far (written, queued for writing or buffered), including any
    /// resumed prefix.
    var receivedBytes: Int64
    /// The prefix `[0, n)` already passed to `pwrite`.
    var contiguousBytes: Int64
    var activeConnections: Int
    /// How many connections the scheduler allows now.
    var targetConnections: Int
    /// Distinct TCP connections under the active requests.
    var tcpConnections: Int
    /// The HTTP version of the latest response (`h1.1`, `h2`).
    var httpVersion: String?
}

/// A segment request failed and is scheduled again.
public struct RetryNotice: Sendable, Equatable {
    /// The bytes still to fetch for that segment; `nil` when the probe is retried.
    public var remaining: ByteRange?
    /// Retry number for this segment since it last made progress (1-based).
    public var retry: Int
    /// Seconds until the retry.
    public var delaySeconds: Double
    /// What failed.
    public var reason: String
}
