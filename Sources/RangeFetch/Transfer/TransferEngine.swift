import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// Reports from the engine thread, delivered synchronously on it: keep handlers short.
enum EngineEvent: Sendable {
    case progress(EngineProgress)
    /// Segment states whose `written` bytes have all been passed to `pwrite`: a handler that
    /// `fdatasync`s the file and then records them keeps the journal truthful.
    case checkpoint([SegmentState], mirrorBytes: [String: [ByteRange]])
    /// A segment failed and will be retried.
    case retrying(RetryNotice)
    /// Something odd that did not stop the download.
    case warning(String)
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

/// Settings for one run of the engine.
struct EngineConfiguration: Sendable {
    enum Mode: Sendable {
        /// Parallel `Range` requests, validated as 206 with an exact `Content-Range`.
        case ranged
        /// One plain GET; a retry starts again from byte 0.
        case singleStream
    }

    var remote: RemoteFile
    var mode: Mode
    /// Where each segment stands; for `.singleStream`, exactly one segment from 0.
    var segments: [SegmentState]
    /// How many connections, fixed or adaptive (a single stream always has one).
    var connections: ConnectionPolicy
    /// A healthy request is not cut so that the new part is shorter than this (bytes).
    var minimumSplitBytes: Int64
    /// When connections are replaced by fresh ones; see ``TransferScheduler/connectionLifetimeSeconds(requestBytes:)``.
    var recycleConnections: DownloadOptions.ConnectionRecycling = .afterLoss
    var request: RequestOptions
    var retry: RetryPolicy
    /// Per-connection coalescing buffer between libcurl's callbacks and `pwrite`, in bytes.
    var writeBufferBytes: Int = 256 << 10
    var progressIntervalSeconds: Double = 0.25
    var checkpointIntervalSeconds: Double = 1
    /// A checkpoint is also taken once this many more bytes are written (see ``CheckpointPolicy``).
    var checkpointIntervalBytes: Int64 = 512 << 10
    /// Seconds between scheduler decisions while transfers run (it is also asked whenever a
    /// transfer finishes).
    var decisionIntervalSeconds: Double = 0.02
    /// Connections shared with other downloads (a batch); `nil`: this download's own.
    var lease: ConnectionLease?
    /// Write buffers shared with other downloads (a batch), whose buffers hold
    /// ``writeBufferBytes``; `nil`: this download's own.
    var bufferPool: BufferPool?
    /// Offsets at or beyond which no segment starts yet (a stream's reorder window), asked at
    /// every decision; `nil`: no limit. With a limit the engine also reports ``EngineEvent/written(_:)``.
    var startLimit: (@Sendable () -> Int64)?
    /// Pieces not yet among ``segments``, added as ``startLimit`` reaches them (a stream's: a
    /// claimed size then costs nothing before its bytes arrive). `nil`: `segments` is the plan.
    var laterPieces: StreamPlan?
    /// Other sources of the same file, probed and checked to agree with ``remote``.
    var mirrors: [RemoteFile] = []
    /// Connections to one source at once.
    var maximumConnectionsPerSource = 16
}

/// Engine-side record of one segment: its state and the request working on it, if any.
final class EngineSegment {
    /// Stable for the segment's life; the scheduler refers to segments by it.
    let id: Int
    var state: SegmentState
    var transfer: SegmentTransfer?
    /// Bytes handed to the write queue whose write has not completed yet; they follow
    /// `state.written` in the file and join it when the write completes.
    var queued: Int64 = 0
    /// Failed tries since this segment last received a byte.
    var triesWithoutProgress = 0
    /// The most bytes ever written or queued for this segment: a single stream restarts from
    /// zero, so only passing this mark counts as progress.
    var bestWritten: Int64 = 0
    /// Monotonic time before which it must not be retried.
    var readyAt: Double = 0

    init(id: Int, state: SegmentState) {
        self.id = id
        self.state = state
        bestWritten = state.written
    }

    /// Every byte is in the file.
    var isComplete: Bool { state.isComplete }

    /// The bytes not yet received (neither written, queued nor buffered).
    var outstanding: ByteRange {
        let next = state.range.lower + state.written + queued + Int64(transfer?.buffered ?? 0)
        return ByteRange(min(next, state.range.upper), state.range.upper)
    }
}

/// Drives libcurl's multi interface on the calling thread: one easy handle per active segment,
/// each writing through its ``SegmentTransfer`` into the partial file.
///
/// It only carries out decisions: which segment to start, where to split, how many connections
/// and who is too slow come from a ``TransferScheduler``; when to checkpoint from a
/// ``CheckpointPolicy``; retry delays from the ``RetryPolicy``.
final class TransferEngine {
    private let configuration: EngineConfiguration
    private let cancellation: CancellationFlag
    private let report: @Sendable (EngineEvent) -> Void
    private let multi: CurlMulti
    private let writer: WriteQueue
    private let pool: BufferPool
    private var scheduler: TransferScheduler
    private var segments: [EngineSegment]
    /// Pieces still to be added to ``segments`` (``EngineConfiguration/laterPieces``).
    private var laterPieces: StreamPlan?
    private var segmentsByID: [Int: EngineSegment] = [:]
    private var nextSegmentID: Int
    private var nextTransferID = 0
    private var active: [UnsafeMutableRawPointer: SegmentTransfer] = [:]
    private var failuresWithoutProgress = 0
    /// ``receivedBytes`` when the last failure was counted: more since then is progress.
    private var receivedAtLastFailure: Int64 = -1
    /// The main URL and its mirrors: where requests go, how each does, which are dropped.
    private var sources: SourceSet
    /// A checkpoint was called for at this time and waits for the writes flushed for it.
    private var checkpointDueSince: Double?
    /// Longest wait for those writes, seconds.
    private static let checkpointWaitSeconds = 0.02
    /// `--max-speed`: one bucket for all transfers; transfers point at it (engine thread only).
    private let limiter: UnsafeMutablePointer<RateLimiter>?
    private var randomState = SystemRandomNumberGenerator()

    /// - Parameter multi: the handle to drive, with its cache of open connections; the engine
    ///   leaves it empty when it returns.
    init(configuration: EngineConfiguration, multi: CurlMulti, file: PartialFile, cancellation: CancellationFlag,
         report: @escaping @Sendable (EngineEvent) -> Void) {
        self.configuration = configuration
        self.multi = multi
        self.cancellation = cancellation
        self.report = report
        sources = SourceSet(remote: configuration.remote, mirrors: configuration.mirrors)
        segments = configuration.segments.enumerated().map { EngineSegment(id: $0.offset, state: $0.element) }
        for segment in segments { segmentsByID[segment.id] = segment }
        nextSegmentID = segments.count
        laterPieces = configuration.laterPieces
        // A shared pool keeps a batch's memory at what its connections use at once, not at the
        // sum of what each file's own pool once needed.
        if let shared = configuration.bufferPool, shared.flushBytes == configuration.writeBufferBytes {
            pool = shared
        } else {
            pool = BufferPool(flushBytes: configuration.writeBufferBytes)
        }
        writer = WriteQueue(file: file, pool: pool, wake: { [multi] in multi.wakeup() })
        let ranged = configuration.mode == .ranged
        var tuning = TransferScheduler.Tuning()
        tuning.minimumSplitBytes = configuration.minimumSplitBytes
        tuning.replacesSlowConnections = configuration.request.maximumBytesPerSecond == nil
        tuning.recycling = configuration.recycleConnections
        scheduler = TransferScheduler(connections: ranged ? configuration.connections : .fixed(1), splittable: ranged,
                                      tuning: tuning)
        if let rate = configuration.request.maximumBytesPerSecond {
            limiter = .allocate(capacity: 1)
            limiter?.initialize(to: RateLimiter(bytesPerSecond: rate, now: MonotonicTime.now()))
        } else {
            limiter = nil
        }
    }

    deinit {
        // Lanes may still hold buffers of an aborted run: they must finish before the pool goes.
        writer.waitUntilIdle()
        limiter?.deinitialize(count: 1)
        limiter?.deallocate()
    }

    /// Segment states as they stand: after ``run()`` returns or throws, every received byte has
    /// been passed to `pwrite` and is counted here.
    var segmentStates: [SegmentState] {
        segments.map(\.state).sorted { $0.range.lower < $1.range.lower }
    }

    /// The bytes each mirror delivered, by the mirror's URL (see ``SourceSet/mirrorExtents``).
    var mirrorExtents: [String: [ByteRange]] { sources.mirrorExtents }

    /// ``mirrorExtents`` plus what running mirror requests received so far: every mirror byte a
    /// checkpoint may count as written.
    private var mirrorBytesSoFar: [String: [ByteRange]] {
        var extents = sources.mirrorExtents
        for transfer in active.values where !transfer.sourceID.isMain {
            guard let requested = transfer.requested, transfer.bytesReceived > 0 else { continue }
            extents[sources[transfer.sourceID].remote.url, default: []].append(
                ByteRange(requested.lower, min(requested.upper, requested.lower + transfer.bytesReceived)))
        }
        return extents
    }

    /// Connections the scheduler allows now.
    var targetConnections: Int { scheduler.targetConnections }

    /// Runs until every segment is complete; throws on a fatal failure, an exhausted retry
    /// budget or cancellation. Either way all buffered bytes are written before it returns.
    func run() throws(DownloadError) {
        cancellation.attach(multi)
        defer {
            cancellation.detach(multi)
            configuration.lease?.wanting(0)
            configuration.lease?.settle(open: multi.openConnections)
        }
        do {
            try loop()
        } catch {
            stopAll()
            throw error
        }
    }

    private func loop() throws(DownloadError) {
        let begin = MonotonicTime.now()
        var nextProgress = 0.0
        var nextDecision = 0.0
        var checkpoints = CheckpointPolicy(now: begin, receivedBytes: receivedBytes,
                                           intervalSeconds: configuration.checkpointIntervalSeconds,
                                           intervalBytes: configuration.checkpointIntervalBytes)
        while true {
            if cancellation.isCancelled { throw .cancelled() }
            var now = MonotonicTime.now()
            if now >= nextDecision {
                try giveUpSlowRequests(now: now)
                decide(now: now)
                nextDecision = now + configuration.decisionIntervalSeconds
            }
            resumePausedTransfers(now: now)
            let deliveredBefore = deliveredBytes
            multi.perform()
            let moved = deliveredBytes - deliveredBefore
            try takeCompletedWrites()
            let finished = multi.completedTransfers()
            for (handle, result) in finished {
                guard let transfer = active.removeValue(forKey: handle) else { continue }
                try complete(transfer, result: result)
            }
            if !finished.isEmpty {
                // Refill freed connections now, not after the next poll's wait.
                now = MonotonicTime.now()
                decide(now: now)
                nextDecision = now + configuration.decisionIntervalSeconds
            }
            if active.isEmpty && segments.allSatisfy(\.isComplete) && laterPieces?.isExhausted != false {
                report(.progress(progress()))
                return
            }
            if now >= nextProgress {
                report(.progress(progress()))
                nextProgress = now + configuration.progressIntervalSeconds
            }
            if checkpoints.shouldCheckpoint(now: now, receivedBytes: receivedBytes) {
                // Partly filled buffers go to disk too, so the checkpoint covers nearly every byte
                // received: a kill then costs about one checkpoint interval, not a buffer per
                // connection. It is recorded once those writes have landed (or soon regardless).
                for transfer in active.values where transfer.failure == nil { transfer.flush() }
                checkpointDueSince = checkpointDueSince ?? now
            }
            if let due = checkpointDueSince,
               segments.allSatisfy({ $0.queued == 0 }) || now - due >= Self.checkpointWaitSeconds {
                report(.checkpoint(segmentStates, mirrorBytes: mirrorBytesSoFar))
                checkpointDueSince = nil
            }
            if moved < Self.coalesceBytes && finished.isEmpty && !active.isEmpty {
                // A trickle (a lossy WAN delivers a packet or two per wake-up): let the sockets
                // gather more before the next round, which would otherwise cost a system call per
                // connection for a few kilobytes.
                usleep(Self.coalesceMicroseconds)
            }
            configuration.lease?.settle(open: multi.openConnections)
            multi.poll(timeoutMilliseconds: pollTimeoutMilliseconds(now: now, nextDecision: nextDecision))
        }
    }

    /// The HTTP version of the latest response, for progress reports.
    private var httpVersion: String?

    private func progress() -> EngineProgress {
        for transfer in active.values {
            if let version = transfer.httpVersion { httpVersion = version }
        }
        return EngineProgress(receivedBytes: receivedBytes, contiguousBytes: segmentStates.contiguousPrefix,
                              activeConnections: active.count, targetConnections: scheduler.targetConnections,
                              tcpConnections: multi.openConnections, httpVersion: httpVersion)
    }

    /// A round of transfers that moved less than this many bytes counts as a trickle…
    private static let coalesceBytes: Int64 = 64 << 10
    /// …and the next round waits this long (a few kilobytes per connection at WAN rates).
    private static let coalesceMicroseconds: UInt32 = 2_000

    /// Body bytes the active requests have delivered so far.
    private var deliveredBytes: Int64 {
        active.values.reduce(0) { $0 + $1.bytesReceived }
    }

    private var receivedBytes: Int64 {
        segments.reduce(0) { $0 + $1.state.written + $1.queued + Int64($1.transfer?.buffered ?? 0) }
    }

    /// Counts finished writes as written and takes their buffers back; throws the first failed
    /// write (a full disk, an I/O error).
    private func takeCompletedWrites() throws(DownloadError) {
        var failure: SystemCallError?
        let completions = writer.takeCompleted()
        defer {
            if configuration.startLimit != nil, !completions.isEmpty { report(.written(segmentStates.contiguousPrefix)) }
        }
        for completion in completions {
            guard let segment = segmentsByID[completion.token] else { continue }
            segment.queued -= Int64(completion.bytes)
            if let error = completion.error {
                failure = failure ?? error
            } else {
                segment.state.written += Int64(completion.bytes)
            }
        }
        if let failure { throw failure.downloadError }
    }

    /// Refills the `--max-speed` bucket and resumes transfers it paused.
    private func resumePausedTransfers(now: Double) {
        guard let limiter else { return }
        limiter.pointee.refill(now: now)
        for transfer in active.values where transfer.isPaused && limiter.pointee.hasTokens {
            transfer.isPaused = false
            transfer.easy.resume()
        }
    }

    /// Longest poll wait, milliseconds: without socket activity the loop still wakes for
    /// scheduler decisions, retries and `--max-speed` refills.
    private static let idlePollMilliseconds: Double = 100

    private func pollTimeoutMilliseconds(now: Double, nextDecision: Double) -> Int32 {
        if active.values.contains(where: \.isPaused) { return 5 }
        var wake = min(now + Self.idlePollMilliseconds / 1000, nextDecision)
        for segment in segments where segment.transfer == nil && !segment.isComplete && segment.readyAt > now {
            wake = min(wake, segment.readyAt)
        }
        return Int32(max(1, min(Self.idlePollMilliseconds, (wake - now) * 1000)))
    }

    // MARK: Carrying out the scheduler's decisions

    private func decide(now: Double) {
        reportPushback()
        noteAnswers()
        let limit = configuration.startLimit?() ?? .max
        addLaterPieces(below: limit)
        var view: [SchedulerSegment] = []
        view.reserveCapacity(segments.count)
        for segment in segments where !segment.isComplete {
            let transfer = segment.transfer.map {
                SchedulerTransfer(id: $0.id, startedAt: $0.startedAt, receivedBytes: $0.bytesReceived, firstByteAt: $0.firstByteAt)
            }
            view.append(SchedulerSegment(id: segment.id, outstanding: segment.outstanding, transfer: transfer,
                                         readyAt: segment.readyAt))
        }
        var denied = 0
        for action in scheduler.decide(now: now, segments: view, receivedBytes: receivedBytes, startLimit: limit) {
            switch action {
            case .start(let id):
                if let segment = segment(id), segment.transfer == nil, !start(segment, now: now) { denied += 1 }
            case .split(let id, let offset):
                if let segment = segment(id), !split(segment, at: offset, now: now) { denied += 1 }
            }
        }
        configuration.lease?.wanting(denied)
    }

    /// Lets the source learn from answered requests before new ones start: a freshly resolved
    /// URL, and origins that disagree on the ETag.
    private func noteAnswers() {
        for transfer in active.values where transfer.firstByteAt != nil {
            sources[source: transfer.sourceID].answered(url: transfer.url, effectiveURL: transfer.effectiveURL)
            sources[source: transfer.sourceID].progressed()
            noteOtherETag(transfer)
        }
        dropSlowSources(now: MonotonicTime.now())
    }

    private func noteOtherETag(_ transfer: SegmentTransfer) {
        let id = transfer.sourceID
        guard transfer.sawOtherETag, sources[source: id].etagsSeenToDisagree() else { return }
        report(.warning("\(sources[source: id].userURL): servers disagree on the ETag (\(sources[id].remote.etag ?? "") and \(transfer.head["etag"] ?? "")) while size and Last-Modified agree; judging the file by size and Last-Modified, and sending If-Range by date"))
    }

    /// Aborts the requests below the ``LowSpeedRule``'s floor (keeping their bytes) and schedules
    /// their ranges again, as tries without progress: a trickle is retried, then given up.
    private func giveUpSlowRequests(now: Double) throws(DownloadError) {
        let rule = configuration.request.lowSpeed
        guard rule.isEnabled else { return }
        let floor = rule.floorPerRequest(requests: active.count, maximumBytesPerSecond: configuration.request.maximumBytesPerSecond)
        var slow: [(SegmentTransfer, Double)] = []
        for transfer in active.values {
            if transfer.isPaused {
                transfer.lowSpeed.restart(now: now, bytes: transfer.bytesReceived)
            } else if let speed = transfer.lowSpeed.check(now: now, bytes: transfer.bytesReceived, floor: floor,
                                                   windowSeconds: rule.windowSeconds) {
                slow.append((transfer, speed))
            }
        }
        for (transfer, speed) in slow {
            detach(transfer)
            let error = DownloadError(.transport(curlCode: Int32(CURLE_OPERATION_TIMEDOUT.rawValue)),
                                      Self.slowMessage(url: transfer.url, speed: speed, floor: floor, seconds: rule.windowSeconds))
            try retry(transfer.segment, after: error, retryAfter: nil)
        }
    }

    /// `URL: the server sent 2 B/s for 10 s, under the floor of 1 KiB/s`.
    static func slowMessage(url: String, speed: Double, floor: Double, seconds: Double) -> String {
        let rate = { (value: Double) in "\(ByteCount.format(Int64(value)))/s" }
        let window = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
        return "\(Redaction.url(url)): the server sent \(rate(speed)) over \(window) s, below the lowest speed accepted (\(rate(floor)) per request)"
    }

    /// Adds the planned pieces that start below `limit`, keeping no more pieces waiting for a
    /// connection than connections may run: enough for every connection, never the whole plan.
    private func addLaterPieces(below limit: Int64) {
        guard laterPieces != nil else { return }
        let waiting = segments.reduce(0) { $0 + ($1.transfer == nil && !$1.isComplete ? 1 : 0) }
        let room = configuration.connections.maximum - waiting
        guard room > 0, let pieces = laterPieces?.pieces(below: limit, atMost: room) else { return }
        for range in pieces {
            let segment = EngineSegment(id: nextSegmentID, state: SegmentState(range: range))
            nextSegmentID += 1
            segments.append(segment)
            segmentsByID[segment.id] = segment
        }
    }

    private func segment(_ id: Int) -> EngineSegment? {
        segmentsByID[id]
    }

    /// Cuts a busy segment at `offset` and starts its tail on a new connection. A cut at the
    /// request's current position cancels that request: the new one takes over.
    /// - Returns: `false` when a shared budget had no connection for it (nothing was cut).
    private func split(_ segment: EngineSegment, at offset: Int64, now: Double) -> Bool {
        guard let transfer = segment.transfer else { return true }
        let cut = max(offset, segment.outstanding.lower)
        guard cut < segment.state.range.upper else { return true }
        let takeover = cut == segment.outstanding.lower
        // A takeover hands the victim's connection on; a plain split needs one more.
        if !takeover, let lease = configuration.lease, !lease.acquire(host: sources[.main].origin) { return false }
        let tail = EngineSegment(id: nextSegmentID, state: SegmentState(range: ByteRange(cut, segment.state.range.upper)))
        nextSegmentID += 1
        if takeover {
            let speed = Double(transfer.bytesReceived) / max(now - transfer.startedAt, 0.001)
            report(.warning(SlowConnectionTakeover.message(range: segment.outstanding, bytesPerSecond: speed)))
            detach(transfer)
        }
        segment.state.range.upper = cut
        segments.append(tail)
        segmentsByID[tail.id] = tail
        return start(tail, now: now, leased: !takeover)
    }

    /// Starts a request for the segment's outstanding bytes.
    /// - Parameter leased: a connection of the shared budget is already taken for it.
    /// - Returns: `false` when the shared budget had no connection for it.
    @discardableResult
    private func start(_ segment: EngineSegment, now: Double, leased: Bool = false) -> Bool {
        guard let id = sources.pick(maximumPerSource: configuration.maximumConnectionsPerSource) else {
            if leased { configuration.lease?.release(host: sources[.main].origin) }
            return false
        }
        if leased && !id.isMain {
            // The split took a connection to the main host; this request goes elsewhere.
            configuration.lease?.release(host: sources[.main].origin)
            if let lease = configuration.lease, !lease.acquire(host: sources[id].origin) { return false }
        }
        if !leased, let lease = configuration.lease, !lease.acquire(host: sources[id].origin) { return false }
        let requested: ByteRange? = configuration.mode == .ranged ? segment.outstanding : nil
        if configuration.mode == .singleStream {
            // A single stream starts again from byte 0: earlier writes must land first.
            if segment.queued > 0 {
                writer.waitUntilIdle()
                try? takeCompletedWrites()
            }
            segment.state.written = 0
        }
        nextTransferID += 1
        let transfer = SegmentTransfer(id: nextTransferID, segment: segment, requested: requested,
                                       url: sources[source: id].requestURL, writer: writer, pool: pool,
                                       remote: sources[id].remote,
                                       toUserURL: sources[source: id].requestURL == sources[source: id].userURL, now: now)
        transfer.sourceID = id
        sources.started(id)
        var extraHeaders: [String] = []
        if let requested {
            transfer.easy.set(CURLOPT_RANGE, requested.httpRangeSpec)
            // A file that changed since the probe answers 200 instead of 206: caught, never merged.
            if let validator = sources[source: id].ifRangeValidator { extraHeaders.append("If-Range: \(validator)") }
            extraHeaders.append("Accept-Encoding: identity")
        }
        transfer.limiter = limiter
        configuration.request.configure(transfer.easy, url: transfer.url, extraHeaders: extraHeaders)
        if let requested, let lifetime = scheduler.connectionLifetimeSeconds(requestBytes: requested.count) {
            transfer.easy.set(CURLOPT_MAXLIFETIME_CONN, lifetime)
        }
        let userdata = Unmanaged.passUnretained(transfer).toOpaque()
        transfer.easy.setWriteCallback(segmentWriteCallback, userdata: userdata)
        transfer.easy.setHeaderCallback(segmentHeaderCallback, userdata: userdata)
        segment.transfer = transfer
        active[transfer.easy.handle] = transfer
        multi.add(transfer.easy)
        return true
    }

    // MARK: Completion

    private func complete(_ transfer: SegmentTransfer, result: CURLcode) throws(DownloadError) {
        let segment = transfer.segment
        // Asked before the handle leaves the multi handle, and its connection with it.
        let sawLoss = result == CURLE_OK ? transfer.easy.lastConnectionSawLoss : nil
        if !scheduler.pathLosesPackets, sawLoss == true { scheduler.notePathLoss() }
        multi.remove(transfer.easy)
        configuration.lease?.release(host: sources[transfer.sourceID].origin)
        segment.transfer = nil
        ended(transfer)
        if transfer.head.status != 0 { transfer.validateHead() }
        if transfer.failure == nil { transfer.flush() }
        pool.give(transfer.recyclableBuffer)
        let timings = transfer.easy.connectionTimings
        var end = RequestEnd(
            range: transfer.requested, status: transfer.head.status, bytes: transfer.bytesReceived,
            seconds: MonotonicTime.now() - transfer.startedAt, retry: segment.triesWithoutProgress,
            // A stolen tail is ended by us (the write callback takes no more): not a failure.
            failure: transfer.failure?.error.message
                ?? (result == CURLE_OK || transfer.stoppedAtSegmentEnd ? nil : result.explanation),
            httpVersion: transfer.httpVersion ?? (transfer.head.status != 0 ? transfer.easy.httpVersion : nil))
        end.newConnection = timings.newConnection
        end.setupSeconds = timings.newConnection ? timings.setupSeconds : nil
        end.firstByteSeconds = transfer.head.status != 0 ? timings.firstByteSeconds : nil
        end.packetsOutOfOrder = sawLoss
        report(.requestEnded(end))
        if let version = transfer.httpVersion { httpVersion = version }
        // Bytes queued for writing count as progress: their writes land a moment later.
        let reached = segment.state.written + segment.queued
        if reached > segment.bestWritten {
            segment.bestWritten = reached
            segment.triesWithoutProgress = 0
            failuresWithoutProgress = 0
        }
        if transfer.overlong {
            report(.warning("\(Redaction.url(transfer.url)): server sent more bytes than the range \(transfer.requested?.httpRangeSpec ?? "") it announced; the excess was discarded"))
        }
        if transfer.firstByteAt != nil {
            sources[source: transfer.sourceID].answered(url: transfer.url, effectiveURL: transfer.effectiveURL)
            sources[source: transfer.sourceID].progressed()
        }
        noteOtherETag(transfer)
        let failed = (result != CURLE_OK && !transfer.stoppedAtSegmentEnd) || transfer.failure != nil
        if failed, transfer.failure?.isFatal != true,
           let drop = sources.failed(transfer.sourceID,
                                     why: transfer.failure?.error.message ?? transfer.easy.errorDetail ?? result.explanation) {
            // A source that fails again and again is dropped; the range goes to another source
            // without spending its tries.
            carryOut(drop)
            try retry(segment, after: DownloadError(.transport(curlCode: 0), "source dropped"), retryAfter: 0, blame: .none)
            return
        }
        if !failed { sources.succeeded(transfer.sourceID) }
        switch transfer.finalVerdict {
        case .accept:
            break
        case .reResolve(let error, let status), .excludeSource(let error, let status):
            try refused(transfer, status: status, error: error)
            return
        case .pushback(let error, let after):
            pushedBack(error, by: transfer.sourceID)
            try retry(segment, after: error, retryAfter: after, blame: .pushback)
            return
        case .retry(let error, let after):
            try retry(segment, after: error, retryAfter: after)
            return
        case .oneStream(let error), .restartWhole(let error), .fatal(let error):
            // The session falls back to one stream (rangesNotHonoured) or restarts (remoteChanged).
            throw error
        }
        if segment.outstanding.isEmpty { return }
        if configuration.mode == .singleStream && configuration.remote.size == nil && result == CURLE_OK {
            // Unknown length: the end of a successful body is the end of the file.
            segment.state.range.upper = segment.state.range.lower + segment.state.written + segment.queued
            return
        }
        let error: DownloadError
        if result == CURLE_OK {
            error = DownloadError(.protocolViolation, "\(Redaction.url(transfer.url)): connection closed after \(transfer.bytesReceived) of \(transfer.requested?.count ?? segment.state.range.count) bytes")
        } else {
            let url = Redaction.url(transfer.url)
            error = TransferFailure.responseHead(result, head: transfer.head, detail: transfer.easy.errorDetail, url: url)
                ?? TransferFailure.curl(result, url: url, detail: transfer.easy.errorDetail,
                                        proxy: configuration.request.proxyInUse(for: transfer.url))
        }
        guard result == CURLE_OK || TransferFailure.isRetryableDuringTransfer(result) else { throw error }
        let refusedConnection = result == CURLE_COULDNT_CONNECT || (result == CURLE_RECV_ERROR && transfer.bytesReceived == 0)
        if refusedConnection { pushedBack(error, by: transfer.sourceID) }
        try retry(segment, after: error, retryAfter: nil, blame: refusedConnection ? .pushback : .segment)
    }

    /// A refusal (401, 403, 410, an expired-token 400) of a request: an expired signed URL is
    /// resolved afresh through the user's URL (see ``Source``); anything else stands.
    private func refused(_ transfer: SegmentTransfer, status: Int, error: DownloadError) throws(DownloadError) {
        let said = transfer.errorSummary.map { ", server said \($0)" } ?? ""
        let id = transfer.sourceID
        switch sources[source: id].refused(url: transfer.url, status: status, body: transfer.errorText) {
        case .reResolve:
            report(.warning("\(sources[source: id].userURL): the redirect target refused a request (HTTP \(status)\(said)), as an expired signed URL does; following the URL again for a fresh one"))
            try retry(transfer.segment, after: error, retryAfter: 0, blame: .none)
        case .retry:
            try retry(transfer.segment, after: error, retryAfter: 0, blame: .none)
        case .fatal where exclude(id, why: "it refused a request (HTTP \(status)\(said))"):
            try retry(transfer.segment, after: error, retryAfter: 0, blame: .none)
        case .fatal where transfer.url == sources[source: id].userURL && sources[source: id].resolutions > 0:
            throw DownloadError(error.code, "\(sources[source: id].userURL): a freshly resolved redirect target refused the request too (HTTP \(status)\(said)); the link may have been revoked", remedy: error.remedy)
        case .fatal:
            throw DownloadError(error.code, error.message + said, remedy: error.remedy)
        }
    }

    /// The server refused a connection (429, 503, a refused or reset connect): fewer connections.
    /// Refusals that arrive together are reported once, by ``reportPushback()``.
    private func pushedBack(_ error: DownloadError, by id: SourceID) {
        sources.pushedBack(id)
        let before = scheduler.targetConnections
        scheduler.notePushback()
        if scheduler.targetConnections < before {
            let how = if case .httpStatus(let status) = error.code { "HTTP \(status)" } else { "connection refused or reset" }
            pushback = (how, id)
        }
    }

    /// How a server last refused a connection, and which source it was, not reported yet.
    private var pushback: (how: String, by: SourceID)?

    private func reportPushback() {
        guard let (how, id) = pushback else { return }
        pushback = nil
        let count = scheduler.targetConnections
        report(.warning("\(sources[source: id].userURL): server refused connections (\(how)); continuing with at most \(count) connection\(count == 1 ? "" : "s")"))
    }

    /// How a failure counts against the retry budget.
    private enum Blame {
        /// A failed try of the segment.
        case segment
        /// The server refused a connection: while other connections still deliver bytes, that
        /// asks for fewer connections, not another try of this range.
        case pushback
        /// An expired signed URL, resolved afresh: ``Source`` bounds those.
        case none
    }

    /// Schedules another try of `segment`, or throws once the retry budget is spent.
    private func retry(_ segment: EngineSegment, after error: DownloadError, retryAfter: Double?,
                       blame: Blame = .segment) throws(DownloadError) {
        let received = receivedBytes
        let progressed = received > receivedAtLastFailure && receivedAtLastFailure >= 0
        receivedAtLastFailure = received
        if progressed { failuresWithoutProgress = 0 }
        switch blame {
        case .segment: segment.triesWithoutProgress += 1
        case .pushback: segment.triesWithoutProgress = progressed ? 1 : segment.triesWithoutProgress + 1
        case .none: break
        }
        if blame != .none { failuresWithoutProgress += 1 }
        let tries = max(1, segment.triesWithoutProgress)
        if tries >= configuration.retry.maximumTries
            || failuresWithoutProgress >= configuration.retry.maximumTries + configuration.connections.maximum {
            throw DownloadError(error.code, "\(error.message) — gave up after \(tries) tries", remedy: error.remedy)
        }
        let jitter = Double.random(in: 0...1, using: &randomState)
        let delay = configuration.retry.delay(beforeRetry: tries, retryAfterSeconds: retryAfter, jitter: jitter)
        segment.readyAt = MonotonicTime.now() + delay
        report(.retrying(RetryNotice(remaining: segment.outstanding, retry: tries, delaySeconds: delay, reason: error.message)))
    }

    /// Aborts every transfer, keeping the valid bytes each had buffered, and waits for every
    /// queued write, so ``segmentStates`` counts all of them.
    private func stopAll() {
        for transfer in active.values { detach(transfer) }
        writer.waitUntilIdle()
        try? takeCompletedWrites()
    }

    // MARK: Sources (the main URL and its mirrors)

    /// Books a request's end against its source (and a mirror's delivered bytes).
    private func ended(_ transfer: SegmentTransfer) {
        let id = transfer.sourceID
        if let requested = transfer.requested, transfer.bytesReceived > 0 {
            sources.delivered(id, ByteRange(requested.lower, min(requested.upper, requested.lower + transfer.bytesReceived)))
        }
        sources.ended(id, bytes: transfer.bytesReceived, firstByteAt: transfer.firstByteAt, now: MonotonicTime.now())
    }

    /// Drops sources far slower per connection than the best one (see ``SourceSet/slowSources(running:now:)``).
    private func dropSlowSources(now: Double) {
        guard sources.hasMirrors else { return }
        let running = active.values.map {
            SourceSet.Running(id: $0.sourceID, bytes: $0.bytesReceived, firstByteAt: $0.firstByteAt)
        }
        for drop in sources.slowSources(running: running, now: now) { carryOut(drop) }
    }

    /// Stops using a source (its running requests go to the others); `false` when it is the
    /// last one left.
    private func exclude(_ id: SourceID, why: String) -> Bool {
        guard let drop = sources.exclude(id, why: why) else { return false }
        carryOut(drop)
        return true
    }

    /// Warns that a source is dropped and moves its running requests to the others.
    private func carryOut(_ drop: SourceSet.Drop) {
        report(.warning(drop.message))
        for transfer in active.values where transfer.sourceID == drop.id { detach(transfer) }
    }

    /// Removes a transfer from the multi handle mid-flight, keeping its valid buffered bytes.
    /// libcurl closes its connection, so a replacement request gets a fresh one.
    private func detach(_ transfer: SegmentTransfer) {
        multi.remove(transfer.easy)
        configuration.lease?.release(host: sources[transfer.sourceID].origin)
        ended(transfer)
        if transfer.failure == nil { transfer.flush() }
        transfer.segment.transfer = nil
        pool.give(transfer.recyclableBuffer)
        active.removeValue(forKey: transfer.easy.handle)
    }
}
