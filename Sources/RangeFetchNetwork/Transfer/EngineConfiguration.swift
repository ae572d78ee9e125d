import RangeFetchBase

/// Settings for one run of the engine.
package struct EngineConfiguration: Sendable {
    package enum Mode: Sendable {
        /// Parallel `Range` requests, validated as 206 with an exact `Content-Range`.
        case ranged
        /// One plain GET; a retry starts again from byte 0.
        case singleStream
    }

    package var remote: RemoteFile
    package var mode: Mode
    /// Where each segment stands; for `.singleStream`, exactly one segment from 0.
    package var segments: [SegmentState]
    /// The resume journal's block grid: each segment's blocks are hashed (CRC-32C) as they are
    /// queued, and ``SegmentState/blocks`` reported. `nil`: no journal, nothing hashed.
    package var blockGrid: BlockGrid?
    /// How many connections, fixed or adaptive (a single stream always has one).
    package var connections: ConnectionPolicy
    /// A healthy request is not cut so that the new part is shorter than this (bytes).
    package var minimumSplitBytes: Int64
    /// When connections are replaced by fresh ones; see ``TransferScheduler/connectionLifetimeSeconds(requestBytes:)``.
    package var recycleConnections: ConnectionRecycling = .afterLoss
    package var request: RequestOptions
    package var retry: RetryPolicy
    /// Per-connection coalescing buffer between libcurl's callbacks and `pwrite`, in bytes.
    package var writeBufferBytes: Int = 256 << 10
    package var progressIntervalSeconds: Double = 0.25
    package var checkpointIntervalSeconds: Double = 1
    /// A checkpoint is also taken once this many more bytes are written (see ``CheckpointPolicy``).
    package var checkpointIntervalBytes: Int64 = 512 << 10
    /// Seconds between scheduler decisions while transfers run (it is also asked whenever a
    /// transfer finishes).
    package var decisionIntervalSeconds: Double = 0.02
    /// Connections shared with other downloads (a batch); `nil`: this download's own.
    package var lease: ConnectionLease?
    /// Write buffers shared with other downloads (a batch), whose buffers hold
    /// ``writeBufferBytes``; `nil`: this download's own.
    package var bufferPool: BufferPool?
    /// Offsets at or beyond which no segment starts yet (a stream's reorder window), asked at
    /// every decision; `nil`: no limit. With a limit the engine also reports ``EngineEvent/written(_:)``.
    package var startLimit: (@Sendable () -> Int64)?
    /// Pieces not yet among ``segments``, added as ``startLimit`` reaches them (a stream's: a
    /// claimed size then costs nothing before its bytes arrive). `nil`: `segments` is the plan.
    package var laterPieces: StreamPlan?
    /// Other sources of the same file, probed and checked to agree with ``remote``.
    package var mirrors: [RemoteFile] = []
    /// Mirrors agreed while the run goes on, each joining at the next decision round (see
    /// ``MirrorFeed``); `nil`: only ``mirrors``.
    package var mirrorFeed: MirrorFeed?
    /// A metalink's piece digests: each piece a response delivers whole is checked as it arrives
    /// (see ``PieceHasher``). `nil`: none.
    package var pieces: PieceDigests?
    /// Connections to one source at once.
    package var maximumConnectionsPerSource: Int = 16

    package init(remote: RemoteFile, mode: Mode, segments: [SegmentState], blockGrid: BlockGrid? = nil, connections: ConnectionPolicy, minimumSplitBytes: Int64, recycleConnections: ConnectionRecycling = .afterLoss, request: RequestOptions, retry: RetryPolicy, writeBufferBytes: Int = 256 << 10, progressIntervalSeconds: Double = 0.25, checkpointIntervalSeconds: Double = 1, checkpointIntervalBytes: Int64 = 512 << 10, decisionIntervalSeconds: Double = 0.02, lease: ConnectionLease? = nil, bufferPool: BufferPool? = nil, startLimit: (@Sendable () -> Int64)? = nil, laterPieces: StreamPlan? = nil, mirrors: [RemoteFile] = [], mirrorFeed: MirrorFeed? = nil, pieces: PieceDigests? = nil, maximumConnectionsPerSource: Int = 16) {
        self.remote = remote
        self.mode = mode
        self.segments = segments
        self.blockGrid = blockGrid
        self.connections = connections
        self.minimumSplitBytes = minimumSplitBytes
        self.recycleConnections = recycleConnections
        self.request = request
        self.retry = retry
        self.writeBufferBytes = writeBufferBytes
        self.progressIntervalSeconds = progressIntervalSeconds
        self.checkpointIntervalSeconds = checkpointIntervalSeconds
        self.checkpointIntervalBytes = checkpointIntervalBytes
        self.decisionIntervalSeconds = decisionIntervalSeconds
        self.lease = lease
        self.bufferPool = bufferPool
        self.startLimit = startLimit
        self.laterPieces = laterPieces
        self.mirrors = mirrors
        self.mirrorFeed = mirrorFeed
        self.pieces = pieces
        self.maximumConnectionsPerSource = maximumConnectionsPerSource
    }
}

extension EngineConfiguration {
    /// The write buffers to use: a batch's shared pool when its buffers have this download's
    /// size (a batch's memory then stays at what its connections use at once, not at the sum of
    /// what each file's own pool once needed), else a pool of its own.
    package var writeBuffers: BufferPool {
        if let shared = bufferPool, shared.flushBytes == writeBufferBytes { return shared }
        return BufferPool(flushBytes: writeBufferBytes)
    }

    /// Where this download's ranges are cut: on its metalink's piece boundaries, if it has any.
    package var cutAlignment: CutAlignment {
        CutAlignment(pieceBytes: mode == .ranged ? pieces?.length : nil)
    }

    /// The scheduler for this download: its connection policy (one for a single stream) and tuning.
    package var scheduler: TransferScheduler {
        var tuning = TransferScheduler.Tuning()
        tuning.minimumSplitBytes = minimumSplitBytes
        tuning.replacesSlowConnections = request.maximumBytesPerSecond == nil
        tuning.recycling = recycleConnections
        tuning.cutAlignment = cutAlignment
        let ranged = mode == .ranged
        return TransferScheduler(connections: ranged ? connections : .fixed(1), splittable: ranged, tuning: tuning)
    }

    /// When the engine checkpoints, from `now` with `receivedBytes` on disk.
    package func checkpoints(now: Double, receivedBytes: Int64) -> CheckpointPolicy {
        CheckpointPolicy(now: now, receivedBytes: receivedBytes, intervalSeconds: checkpointIntervalSeconds,
                         intervalBytes: checkpointIntervalBytes)
    }
}
