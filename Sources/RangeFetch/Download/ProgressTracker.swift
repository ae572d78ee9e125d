import RangeFetchBase
import RangeFetchNetwork

/// Turns raw byte counts from the engine into progress events with speed and ETA, at most
/// every quarter second.
final class ProgressTracker: @unchecked Sendable {
    private let totalBytes: Int64?
    private let emit: @Sendable (DownloadEvent) -> Void
    private var rate = RateEstimator()

    init(totalBytes: Int64?, emit: @escaping @Sendable (DownloadEvent) -> Void) {
        self.totalBytes = totalBytes
        self.emit = emit
    }

    /// Called on the engine thread only.
    func update(_ progress: EngineProgress) {
        rate.record(bytes: progress.receivedBytes, at: MonotonicTime.now())
        let remaining = totalBytes.map { $0 - progress.receivedBytes }
        emit(.progress(DownloadProgress(receivedBytes: progress.receivedBytes, totalBytes: totalBytes,
                                        bytesPerSecond: rate.bytesPerSecond,
                                        etaSeconds: remaining.flatMap { rate.eta(remaining: $0) },
                                        activeConnections: progress.activeConnections,
                                        targetConnections: progress.targetConnections,
                                        tcpConnections: progress.tcpConnections, httpVersion: progress.httpVersion)))
    }
}
