import RangeFetchBase
import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// One download's transfers, run by a ``CurlLoop`` on the calling thread: one easy handle per
/// active segment, each writing through its ``SegmentTransfer`` into the partial file.
///
/// It only carries out decisions: which segment to start, where to split, how many connections
/// and who is too slow come from a ``TransferScheduler``; what a response means from its
/// ``ResponseVerdict``; where a request goes from the ``SourceSet``; when to checkpoint from a
/// ``CheckpointPolicy``; whether and when to retry from its ``SegmentRetries``; what an ended request
/// comes to from its ``RequestOutcome``; how long to wait between rounds from ``RoundPacing``.
package final class TransferEngine: CurlLoopClient {
    private let configuration: EngineConfiguration
    private let cancellation: CancellationFlag
    private let report: @Sendable (EngineEvent) -> Void
    private let loop: CurlLoop
    private let writer: WriteQueue
    private let pool: BufferPool
    private var scheduler: TransferScheduler
    private let book: SegmentBook
    private var nextTransferID = 0
    /// The requests in the loop, by their token: the transfer's id.
    private var active: [Int: SegmentTransfer] = [:]
    private var retries: SegmentRetries
    /// The main URL and its mirrors: where requests go, how each does, which are dropped.
    private let sources: EngineSources
    /// A batch's connection budget, taken per request.
    private let leases: EngineLease
    private var checkpoints: CheckpointPolicy
    /// `--max-speed`: one bucket for all transfers.
    private let speedLimit: SpeedLimit?
    private var nextProgress = 0.0
    private var nextDecision = 0.0
    /// ``deliveredBytes`` before this round's transfers ran.
    private var deliveredBefore: Int64 = 0
    /// The HTTP version of the latest response, for progress reports.
    private var httpVersion: String?
    /// Which sources sent a `Content-Digest` we can check, and which answered without.
    private var digestSources = DigestSources()
    /// The instant of the latest round (monotonic seconds), for a stop between rounds: the
    /// engine reads no clock, its caller gives it `now` once per round.
    private var roundAt: Double

    /// - Parameter loop: the loop to run on, with its cache of open connections; the engine
    ///   leaves none of its requests in it when it returns.
    /// - Parameter now: monotonic seconds at its creation, where checkpoint and `--max-speed`
    ///   intervals start.
    package init(configuration: EngineConfiguration, loop: CurlLoop, file: PartialFile, cancellation: CancellationFlag,
         now: Double, report: @escaping @Sendable (EngineEvent) -> Void) {
        self.configuration = configuration
        self.loop = loop
        self.cancellation = cancellation
        self.report = report
        sources = EngineSources(remote: configuration.remote, mirrors: configuration.mirrors, feed: configuration.mirrorFeed, report: report)
        leases = EngineLease(lease: configuration.lease) { [sources] in sources[$0].origin }
        book = SegmentBook(configuration)
        pool = configuration.writeBuffers
        writer = WriteQueue(file: file, pool: pool, wake: { [loop] in loop.wakeup() })
        scheduler = configuration.scheduler
        retries = SegmentRetries(policy: configuration.retry, maximumConnections: configuration.connections.maximum)
        roundAt = now
        checkpoints = configuration.checkpoints(now: now, receivedBytes: book.receivedBytes)
        speedLimit = SpeedLimit(configuration.request, now: now)
        if configuration.request.speedControl != nil { scheduler.tuning.replacesSlowConnections = speedLimit?.bytesPerSecond == nil }
        // A stream's pieces come later: its cuts are budgeted on the whole file.
        if configuration.startLimit != nil, let size = configuration.remote.size { scheduler.budgetCuts(remaining: size) }
    }

    deinit {
        // Lanes may still hold buffers of an aborted run: they must finish before the pool goes.
        writer.waitUntilIdle()
    }

    /// Segment states as they stand: after ``run()`` returns or throws, every received byte has
    /// been passed to `pwrite` and is counted here.
    package var segmentStates: [SegmentState] { book.states }

    /// The bytes each mirror delivered, by the mirror's URL (see ``SourceSet/mirrorExtents``).
    package var mirrorExtents: [String: [ByteRange]] { sources.sourceSet.mirrorExtents }

    /// The metalink pieces proven as they arrived (``EngineConfiguration/pieces``), all written.
    package var provenPieces: [Int] { book.segments.flatMap(\.writtenProvenPieces) }

    /// Runs until every segment is complete; throws on a fatal failure, an exhausted retry
    /// budget or cancellation. Either way all buffered bytes are written before it returns.
    package func run() throws(DownloadError) {
        defer {
            configuration.lease?.wanting(0)
            configuration.lease?.settle(open: loop.openConnections)
        }
        do {
            try loop.run(self, cancellation: cancellation)
        } catch {
            stopAll()
            throw error
        }
    }

    // MARK: Rounds of the loop

    package func beforeTransfers(now: Double) throws(DownloadError) {
        roundAt = now
        if now >= nextDecision {
            try giveUpSlowRequests(now: now)
            try decide(now: now)
            nextDecision = now + scheduler.decisionInterval(usually: configuration.decisionIntervalSeconds)
        }
        // A capped connection is slow on purpose: none is replaced while a cap holds.
        if speedLimit?.follow(now: now) == true { scheduler.tuning.replacesSlowConnections = speedLimit?.bytesPerSecond == nil }
        speedLimit?.resume(active.values, now: now)
        deliveredBefore = deliveredBytes
    }

    package func afterTransfers(finished: [CurlLoop.Finished], now: Double) throws(DownloadError) -> CurlLoop.Next {
        roundAt = now
        // First bytes that came in this round's transfers are dated now, before any is booked.
        for transfer in active.values { transfer.dateFirstByte(now: now) }
        let moved = deliveredBytes - deliveredBefore
        try takeCompletedWrites()
        for end in finished {
            guard let transfer = active.removeValue(forKey: end.token) else { continue }
            try complete(transfer, result: end.result, sawLoss: end.connectionSawLoss, now: now)
        }
        if !finished.isEmpty {
            // Refill freed connections now, not after the next poll's wait.
            try decide(now: now)
            nextDecision = now + scheduler.decisionInterval(usually: configuration.decisionIntervalSeconds)
        }
        if active.isEmpty && book.isComplete {
            report(.progress(progress()))
            return .done
        }
        if now >= nextProgress {
            report(.progress(progress()))
            nextProgress = now + configuration.progressIntervalSeconds
        }
        let calledFor = checkpoints.shouldCheckpoint(now: now, receivedBytes: book.receivedBytes)
        // Partly filled buffers go to disk too, so the checkpoint covers nearly every byte
        // received: a kill then costs about one checkpoint interval, not a buffer per connection.
        if calledFor { for transfer in active.values where transfer.failure == nil { transfer.flush() } }
        if checkpoints.shouldRecord(now: now, calledFor: calledFor, writesLanded: book.writesLanded) {
            // Bytes of a response whose Content-Digest is not checked yet are not claimed.
            report(.checkpoint(book.recordedStates, mirrorBytes: sources.mirrorBytes(running: active.values)))
        }
        if RoundPacing.isTrickle(movedBytes: moved, anyEnded: !finished.isEmpty, anyRunning: !active.isEmpty) {
            usleep(RoundPacing.coalesceMicroseconds)
        }
        configuration.lease?.settle(open: loop.openConnections)
        return .wait(milliseconds: RoundPacing.pollMilliseconds(now: now, paused: active.values.contains(where: \.isPaused),
                                                                nextDecision: nextDecision, readyAt: book.waiting.lazy.map(\.readyAt)))
    }

    private func progress() -> EngineProgress {
        httpVersion = active.values.lazy.compactMap(\.httpVersion).first ?? httpVersion
        return EngineProgress(receivedBytes: book.receivedBytes, contiguousBytes: book.vouchedStates.contiguousPrefix,
                              activeConnections: active.count, targetConnections: scheduler.targetConnections,
                              tcpConnections: loop.openConnections, httpVersion: httpVersion)
    }

    /// Body bytes the active requests have delivered so far.
    private var deliveredBytes: Int64 { active.values.reduce(0) { $0 + $1.bytesReceived } }

    /// Counts finished writes as written, takes their buffers back; throws the first failed write.
    private func takeCompletedWrites() throws(DownloadError) {
        let completions = writer.takeCompleted()
        let failure = book.credit(completions)
        if configuration.startLimit != nil, !completions.isEmpty { report(.written(book.vouchedStates.contiguousPrefix)) }
        if let failure { throw failure.downloadError }
    }

    // MARK: Carrying out the scheduler's decisions

    private func decide(now: Double) throws(DownloadError) {
        sources.reportPushback(connections: scheduler.targetConnections)
        let joined = sources.refresh(running: active.values), share = max(1, scheduler.targetConnections / sources.sourceSet.ids.count)
        for segment in book.forJoining(joined, share: joined * share, minimumBytes: configuration.minimumSplitBytes, digests: digestSources, now: now) {
            _ = try start(segment, now: now)
        }
        carryOut(sources.dropSlow(running: active.values, now: now), now: now)
        let limit = configuration.startLimit?() ?? .max
        book.addLaterPieces(below: limit, connections: configuration.connections.maximum)
        var denied = 0
        // Bytes waiting unread are asked only of requests without a byte after a tenth of a
        // second (a socket lookup each).
        let view = book.schedulerView(digests: digestSources) { transfer in
            now - transfer.startedAt >= 0.1 && (transfer.unreadOnConnection?()?.bytes ?? 0) > 0
        }
        for action in scheduler.decide(now: now, segments: view, receivedBytes: book.receivedBytes, startLimit: limit) {
            switch action {
            case .start(let id):
                if let segment = book[id], segment.transfer == nil, try !start(segment, now: now) { denied += 1 }
            case .split(let id, let offset):
                if let segment = book[id], try !split(segment, at: offset, now: now) { denied += 1 }
            }
        }
        configuration.lease?.wanting(denied)
    }

    /// Aborts the requests below the ``LowSpeedRule``'s floor (keeping their bytes) and schedules
    /// their ranges again, as tries without progress: a trickle is retried, then given up.
    private func giveUpSlowRequests(now: Double) throws(DownloadError) {
        let rule = configuration.request.lowSpeed
        for (transfer, error) in rule.slowRequests(Array(active.values), now: now,
                                                   maximumBytesPerSecond: speedLimit?.bytesPerSecond) {
            detach(transfer, now: now)
            try retry(transfer.segment, after: error, retryAfter: nil, now: now)
        }
    }

    /// Cuts a busy segment at `offset` and starts its tail on a new connection. A cut at the
    /// request's current position cancels that request: the new one takes over.
    /// - Returns: `false` when a shared budget had no connection for it (nothing was cut).
    private func split(_ segment: EngineSegment, at offset: Int64, now: Double) throws(DownloadError) -> Bool {
        guard let transfer = segment.transfer else { return true }
        let cut = max(offset, segment.outstanding.lower)
        guard cut < segment.state.range.upper else { return true }
        let takeover = cut == segment.outstanding.lower
        // A slow request that may not be cut (``SegmentTransfer/mayBeCut(_:)``) may still be replaced.
        if !takeover, !transfer.mayBeCut(digestSources) { return true }
        // A takeover hands the victim's connection on; a plain split needs one more.
        if !takeover, !leases.acquire(.main) { return false }
        if takeover {
            let speed = Double(transfer.bytesReceived) / max(now - transfer.startedAt, 0.001)
            report(.warning(.slowConnectionReplaced(range: segment.outstanding, bytesPerSecond: speed)))
            detach(transfer, now: now)
        }
        if !takeover { scheduler.noteCut(segment.outstanding, at: cut, transfer: transfer.id) }
        let tail = book.add(ByteRange(cut, segment.state.range.upper))
        segment.state.range.upper = cut
        return try start(tail, now: now, leased: !takeover)
    }

    /// Starts a request for the segment's outstanding bytes.
    /// - Parameter leased: a connection of the shared budget is already taken for it.
    /// - Returns: `false` when the shared budget had no connection for it.
    /// - Throws: when libcurl cannot set the request up.
    private func start(_ segment: EngineSegment, now: Double, leased: Bool = false) throws(DownloadError) -> Bool {
        let picked = sources.pick(maximumPerSource: configuration.maximumConnectionsPerSource, avoiding: segment.distrusted)
        guard leases.take(for: picked, leased: leased), let id = picked else { return false }
        let requested: ByteRange? = configuration.mode == .ranged ? segment.outstanding : nil
        if configuration.mode == .singleStream {
            // A single stream starts again from byte 0: earlier writes must land first.
            if segment.queued > 0 {
                writer.waitUntilIdle()
                try? takeCompletedWrites()
            }
            segment.rewind(to: 0)
        }
        nextTransferID += 1
        let source = sources[source: id]
        let transfer: SegmentTransfer
        do {
            transfer = try SegmentTransfer(id: nextTransferID, segment: segment, requested: requested, url: source.requestURL,
                                           writer: writer, pool: pool, remote: sources[id].remote,
                                           toUserURL: source.requestURL == source.userURL, now: now)
        } catch {
            leases.release(id)
            throw error
        }
        transfer.sourceID = id
        transfer.resolutionRound = source.resolutions
        transfer.unreadOnConnection = { [loop, easy = transfer.easy] in loop.unreadBytes(of: easy) }
        transfer.pieces = configuration.pieces
        transfer.configure(configuration.request, ifRange: source.ifRangeValidator,
                           connectionLifetime: requested.flatMap { scheduler.connectionLifetimeSeconds(requestBytes: $0.count) },
                           limiter: speedLimit?.bucket)
        sources.started(id)
        segment.transfer = transfer
        active[transfer.id] = transfer
        // A request libcurl refuses ends the download: ``stopAll()`` books it like the others.
        try loop.add(transfer.easy, token: transfer.id)
        return true
    }

    // MARK: Retries

    /// Schedules another try of `segment`, or throws once the retry budget is spent.
    private func retry(_ segment: EngineSegment, after error: DownloadError, retryAfter: Double?,
                       blame: RetryBudget.Blame = .segment, now: Double) throws(DownloadError) {
        report(.retrying(try retries.retry(segment, after: error, retryAfter: retryAfter, blame: blame,
                                           receivedBytes: book.receivedBytes, now: now)))
    }

    /// Aborts every transfer, keeping the valid bytes each had buffered, and waits for every
    /// queued write, so ``segmentStates`` counts all of them.
    /// Bytes of a response whose `Content-Digest` was not checked yet are not counted (see
    /// ``detach(_:now:)``): a resume fetches them again. Booked at the latest round's instant.
    private func stopAll() {
        for transfer in active.values { detach(transfer, now: roundAt) }
        writer.waitUntilIdle()
        try? takeCompletedWrites()
    }

    /// Removes a transfer from the loop mid-flight, keeping its valid buffered bytes.
    /// libcurl closes its connection, so a replacement request gets a fresh one.
    /// A response carrying a `Content-Digest` not checked yet keeps none of its bytes: cut off by
    /// us, it can never be proven, and it may be a lying range's (a slow one, replaced).
    private func detach(_ transfer: SegmentTransfer, now: Double) {
        let unproven = transfer.unprovenFrom
        loop.remove(transfer.easy)
        transfer.unreadOnConnection = nil
        active.removeValue(forKey: transfer.id)
        leases.release(transfer.sourceID)
        sources.ended(transfer, now: now)
        if transfer.failure == nil { transfer.flush() }
        transfer.segment.transfer = nil
        pool.give(transfer.recyclableBuffer)
        if let unproven { try? discard(transfer.segment, from: unproven) }
    }

    /// Puts `segment` back to file offset `start` (where a response began whose bytes are not
    /// kept); its queued writes land first, so none is credited afterwards.
    private func discard(_ segment: EngineSegment, from start: Int64) throws(DownloadError) {
        writer.waitUntilIdle()
        try takeCompletedWrites()
        segment.rewind(to: segment.state.vouched(unprovenFrom: start).written)
    }

    /// Moves the running requests of dropped sources to the others.
    private func carryOut(_ dropped: [SourceID], now: Double) {
        for transfer in active.values where dropped.contains(transfer.sourceID) { detach(transfer, now: now) }
    }

    // MARK: Completion

    /// Books a request libcurl finished with `result` and carries out its ``RequestOutcome``: done,
    /// retried, its source dropped, or the download failed.
    private func complete(_ transfer: SegmentTransfer, result: CURLcode, sawLoss: Bool?, now: Double) throws(DownloadError) {
        let segment = transfer.segment
        if !scheduler.pathLosesPackets, sawLoss == true { scheduler.notePathLoss() }
        if transfer.stoppedAtSegmentEnd, let ahead = transfer.state.aheadOfCut { scheduler.noteCutStopped(aheadOfCut: ahead) }
        transfer.unreadOnConnection = nil
        leases.release(transfer.sourceID)
        segment.transfer = nil
        if transfer.head.status != 0 { transfer.validateHead() }
        transfer.settleProof(result: result)
        if transfer.state.headJudged { digestSources.answered(transfer.sourceID, withDigest: transfer.proofs.contentCheck != nil) }
        sources.ended(transfer, now: now)
        if transfer.failure == nil { transfer.flush() }
        pool.give(transfer.recyclableBuffer)
        report(.requestEnded(transfer.end(result: result, connectionSawLoss: sawLoss, now: now)))
        if let version = transfer.httpVersion { httpVersion = version }
        let outcome = transfer.outcome(result: result, userURL: sources[source: transfer.sourceID].userURL,
                                       proxy: configuration.request.proxyInUse(for: transfer.url),
                                       streamOfUnknownLength: configuration.mode == .singleStream && configuration.remote.size == nil)
        if outcome.keepsBytes {
            // Rejected bytes are no progress.
            if segment.bookTry() { retries.segmentProgressed() }
            if transfer.state.isOverlong { report(.warning(.overlongResponse(url: Redaction.url(transfer.url), range: transfer.requested))) }
            sources.learn(from: transfer)
        }
        if let fault = outcome.sourceFault, let drop = sources.failed(transfer, why: fault.why) {
            // A source that fails again and again is dropped; the range goes to another source
            // without spending its tries. The retry names the dropped source's own failure.
            carryOut([drop], now: now)
            try retry(segment, after: fault.error, retryAfter: 0, blame: .none, now: now)
            return
        }
        if outcome.succeeded { sources.succeeded(transfer.sourceID) }
        switch outcome.action {
        case .reject(let start, let warning, let error):
            try reject(transfer, from: start, warning, error, now: now)
        case .unprovable(let start):
            try discard(segment, from: start)
            sources.learn(from: transfer)
        case .done:
            break
        case .endOfFile:
            segment.state.range.upper = segment.state.range.lower + segment.state.written + segment.queued
        case .refused(let error, let status):
            let refusal = sources.refused(transfer, status: status, error: error)
            if let drop = refusal.drop { carryOut([drop], now: now) }
            guard refusal.retry else { throw refusal.error }
            try retry(segment, after: error, retryAfter: 0, blame: .none, now: now)
        case .pushback(let error, let after):
            // The server refused a connection (429, 503, a refused or reset connect): fewer connections.
            let before = scheduler.targetConnections
            scheduler.notePushback()
            sources.pushedBack(transfer.sourceID, error: error, before: before, after: scheduler.targetConnections)
            try retry(segment, after: error, retryAfter: after, blame: .pushback, now: now)
        case .retry(let error, let after):
            try retry(segment, after: error, retryAfter: after, now: now)
        case .fail(let error):
            throw error
        }
    }

    /// Rejects the bytes of a response that failed its proof (see ``RangeProof/reject(from:warning:error:)``).
    private func reject(_ transfer: SegmentTransfer, from start: Int64, _ warning: DownloadWarning,
                        _ error: DownloadError, now: Double) throws(DownloadError) {
        try discard(transfer.segment, from: start)
        transfer.segment.distrusted = transfer.sourceID
        report(.warning(warning))
        if let drop = sources.failed(transfer, why: error.message) { carryOut([drop], now: now) }
        try retry(transfer.segment, after: error, retryAfter: 0, now: now)
    }
}
