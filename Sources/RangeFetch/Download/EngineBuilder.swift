import RangeFetchBase
import RangeFetchNetwork

/// Builds the `TransferEngine` for each run of a download (a file's, a refetch round's, a
/// stream's) and turns its events into progress, checkpoints and messages.
struct EngineBuilder {
    let options: DownloadOptions
    let cancellation: CancellationFlag
    let loop: CurlLoop
    let sharing: DownloadSession.BatchSharing?
    /// The download's mirrors: a ranged run takes them from its feed as they agree (the checks
    /// run beside the download, started once by ``MirrorAgreement/begin(with:)``).
    let mirrors: MirrorAgreement
    let emit: @Sendable (DownloadEvent) -> Void

    /// The engine for one run over `segments` into `file`, its events turned into progress,
    /// checkpoints and messages.
    /// - Parameters:
    ///   - startLimit: a stream's reorder window (see ``EngineConfiguration/startLimit``).
    ///   - laterPieces: a stream's pieces, planned as the window reaches them.
    ///   - pieces: a metalink's piece digests, checked as each piece arrives (ranged runs only).
    ///   - follow: told how long the written prefix `[0, n)` has grown (a digest or a stream
    ///     follows it).
    func makeEngine(remote: RemoteFile, size: Int64?, segments: [SegmentState], mode: EngineConfiguration.Mode,
                    file: PartialFile, checkpointer: Checkpointer?, startLimit: (@Sendable () -> Int64)? = nil,
                    laterPieces: StreamPlan? = nil, pieces: Metalink.Pieces? = nil, follow: @escaping @Sendable (Int64) -> Void) -> TransferEngine {
        let policy: ConnectionPolicy = switch options.connections {
        case .automatic: .adaptive(maximum: options.maximumConnections)
        case .fixed(let count): .fixed(count)
        }
        var configuration = EngineConfiguration(
            remote: remote, mode: mode, segments: segments, connections: mode == .ranged ? policy : .fixed(1),
            minimumSplitBytes: options.minimumSplitBytes, recycleConnections: options.recycleConnections,
            request: options.request, retry: options.retry,
            writeBufferBytes: DownloadSession.writeBufferBytes(options),
            checkpointIntervalSeconds: options.checkpointIntervalSeconds,
            lease: sharing?.lease(host: Source(remote: remote).origin),
            bufferPool: sharing?.buffers)
        configuration.blockGrid = checkpointer?.blockGrid
        configuration.startLimit = startLimit
        configuration.laterPieces = laterPieces
        if mode == .ranged { configuration.pieces = pieces }
        configuration.maximumConnectionsPerSource = options.maximumConnectionsPerHost
        if mode == .ranged { configuration.mirrorFeed = mirrors.feed }
        let tracker = ProgressTracker(totalBytes: size, emit: emit)
        let emit = self.emit
        let resumed = mirrors.resumedUnchecked
        return TransferEngine(configuration: configuration, loop: loop, file: file, cancellation: cancellation,
                              now: MonotonicTime.now()) { event in
            switch event {
            case .progress(let progress):
                tracker.update(progress)
                follow(progress.contiguousBytes)
                checkpointer?.startWriteback()
            case .written(let prefix):
                follow(prefix)
            case .checkpoint(let states, let mirrorBytes):
                checkpointer?.submit(states, unchecked: resumed.merging(mirrorBytes) { $0 + $1 })
            case .retrying(let notice):
                emit(.retrying(notice))
            case .warning(let message):
                emit(.warning(message))
            case .requestEnded(let end):
                emit(.requestEnded(end))
            }
        }
    }
}
