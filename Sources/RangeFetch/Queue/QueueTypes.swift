import RangeFetchBase
import RangeFetchNetwork

/// A download's number in a ``DownloadQueue``: given once, never reused while the queue lives.
public struct DownloadID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: DownloadID, rhs: DownloadID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "#\(rawValue)" }
}

/// Where a queued download stands.
public enum QueueStatus: String, Sendable, Equatable, CustomStringConvertible {
    /// Waiting for its turn (``DownloadQueue/maximumActive`` run at once).
    case waiting
    /// Running (possibly asked to stop, not stopped yet).
    case active
    /// Stopped by ``DownloadQueue/pause(_:)``: no more bytes arrive; what is on disk and in its
    /// journal is kept, and ``DownloadQueue/resume(_:)`` goes on from there.
    case paused
    /// The file is complete and verified at its final path.
    case complete
    /// It ended with an error (``QueueEvent/failed(_:_:)`` says which); resuming tries again.
    case failed

    public var description: String { rawValue }
}

/// An operation the queue refused: which download, and why.
public struct QueueError: Error, Sendable, Equatable, CustomStringConvertible {
    public let id: DownloadID
    public let message: String

    init(_ id: DownloadID, _ reason: String) {
        self.id = id
        message = "download \(id) \(reason)"
    }

    public var description: String { message }
}

/// What happens in a ``DownloadQueue``, in order for each download.
public enum QueueEvent: Sendable {
    /// Added, waiting or paused.
    case added(DownloadID, url: String, status: QueueStatus)
    /// Its turn came: the download starts or resumes.
    case started(DownloadID)
    /// One of its download's events (``DownloadEvent``): progress, warnings, retries.
    case download(DownloadID, DownloadEvent)
    /// It stopped as asked: no more bytes arrive, its partial file and journal are on disk.
    case paused(DownloadID)
    /// It was stopped to let others run (``DownloadQueue/maximumActive`` was lowered) and waits.
    case requeued(DownloadID)
    /// Its file is complete at its final path.
    case completed(DownloadID, DownloadSummary)
    /// It ended with this error.
    case failed(DownloadID, DownloadError)
    /// It was removed (and its partial file deleted unless kept).
    case removed(DownloadID)
}

/// One download as the queue holds it.
public struct QueueEntry: Sendable {
    public let id: DownloadID
    /// The user's URL (with any secret in it redacted).
    public let url: String
    public let status: QueueStatus
    /// Its final path, once known (after its first start).
    public let path: String?
    /// Bytes of the file on disk or received, and its size when known.
    public let receivedBytes: Int64
    public let totalBytes: Int64?
    /// Its speed over the last few seconds while it runs (0 otherwise), bytes per second.
    public let bytesPerSecond: Double
    /// Requests in flight while it runs.
    public let connections: Int
    /// Why it failed, for a failed download.
    public let error: DownloadError?
}
