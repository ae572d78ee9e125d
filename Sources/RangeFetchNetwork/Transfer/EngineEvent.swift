import RangeFetchBase

/// Reports from the engine thread, delivered synchronously on it: keep handlers short.
package enum EngineEvent: Sendable {
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
package struct EngineProgress: Sendable {
    /// Bytes of the file received so far (written, queued for writing or buffered), including any
    /// resumed prefix.
    package var receivedBytes: Int64
    /// The prefix `[0, n)` already passed to `pwrite`.
    package var contiguousBytes: Int64
    package var activeConnections: Int
    /// How many connections the scheduler allows now.
    package var targetConnections: Int
    /// Distinct TCP connections under the active requests.
    package var tcpConnections: Int
    /// The HTTP version of the latest response (`h1.1`, `h2`).
    package var httpVersion: String?

    package init(receivedBytes: Int64, contiguousBytes: Int64, activeConnections: Int, targetConnections: Int, tcpConnections: Int, httpVersion: String? = nil) {
        self.receivedBytes = receivedBytes
        self.contiguousBytes = contiguousBytes
        self.activeConnections = activeConnections
        self.targetConnections = targetConnections
        self.tcpConnections = tcpConnections
        self.httpVersion = httpVersion
    }
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

    package init(remaining: ByteRange? = nil, retry: Int, delaySeconds: Double, reason: String) {
        self.remaining = remaining
        self.retry = retry
        self.delaySeconds = delaySeconds
        self.reason = reason
    }
}
