import CCurl

/// Reports from the engine thread, delivered synchronously on it: keep handlers short.
enum EngineEvent: Sendable {
    /// Bytes of the file received so far (written or buffered), including any resumed prefix.
    /// `contiguousBytes`: the prefix `[0, n)` already passed to `pwrite`.
    case progress(receivedBytes: Int64, contiguousBytes: Int64, activeConnections: Int)
    /// Segment states whose `written` bytes have all been passed to `pwrite`: a handler that
    /// `fdatasync`s the file and then records them keeps the journal truthful.
    case checkpoint([SegmentState])
    /// A segment failed and will be retried.
    case retrying(RetryNotice)
    /// Something odd that did not stop the download.
    case warning(String)
}

/// A segment request failed and is scheduled again.
public struct RetryNotice: Sendable, Equatable {
    /// The bytes still to fetch for that segment; `nil` when the probe is retried.
    public var remaining: ByteRange?
    /// Retry number for this segment since it last made progress (1-based).
    public var retry: Int
    public var delaySeconds: Double
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
    var connections: Int
    var planner: SegmentPlanner
    var request: RequestOptions
    var retry: RetryPolicy
    /// Per-connection coalescing buffer between libcurl's callbacks and `pwrite`.
    var writeBufferBytes: Int = 1 << 20
    var progressIntervalSeconds: Double = 0.25
    var checkpointIntervalSeconds: Double = 1
    var hedging = HedgingPolicy()
}

/// When a connection far slower than its siblings is replaced by a fresh one (slow-tail
/// hedging): a trickling peer must not hold the whole download hostage.
struct HedgingPolicy: Sendable {
    /// A transfer is slow below this fraction of the median speed of the active transfers.
    var slowFraction = 0.25
    /// It must stay slow this long (seconds) before it is replaced.
    var slowForSeconds: Double = 1.5
    /// New transfers are not judged before this many seconds.
    var graceSeconds: Double = 2
    /// Replacing pays only when the slow transfer would need longer than this (seconds).
    var minimumRemainingSeconds: Double = 2
    /// A segment is replaced at most this many times.
    var maximumReplacements = 3
}

/// Engine-side record of one segment: its state and the request working on it, if any.
final class EngineSegment {
    var state: SegmentState
    var transfer: SegmentTransfer?
    /// Failed tries since this segment last received a byte.
    var triesWithoutProgress = 0
    /// Times a slow connection for this segment was replaced.
    var replacements = 0
    /// The most bytes ever written for this segment: a single stream restarts from zero, so
    /// only passing this mark counts as progress.
    var bestWritten: Int64 = 0
    /// Monotonic time before which it must not be retried.
    var readyAt: Double = 0

    init(state: SegmentState) { self.state = state }

    var isComplete: Bool { state.isComplete }
}

/// Drives libcurl's multi interface on the calling thread: one easy handle per active segment,
/// each writing through its ``SegmentTransfer`` into the partial file.
///
/// The plan is dynamic: a connection that finds no unstarted segment takes the second half of
/// the largest outstanding one (work stealing).
final class TransferEngine {
    private let configuration: EngineConfiguration
    private let file: PartialFile
    private let cancellation: CancellationFlag
    private let report: @Sendable (EngineEvent) -> Void
    private let multi = CurlMulti()
    private var segments: [EngineSegment]
    private var active: [UnsafeMutableRawPointer: SegmentTransfer] = [:]
    private var spareBuffers: [UnsafeMutableRawBufferPointer] = []
    private var failuresWithoutProgress = 0
    /// Average speeds of recently finished transfers: the yardstick for the last straggler,
    /// which has no active siblings left to compare with.
    private var finishedSpeeds: [Double] = []
    /// `--max-speed`: one bucket for all transfers; transfers point at it (engine thread only).
    private let limiter: UnsafeMutablePointer<RateLimiter>?
    private var randomState = SystemRandomNumberGenerator()

    init(configuration: EngineConfiguration, file: PartialFile, cancellation: CancellationFlag,
         report: @escaping @Sendable (EngineEvent) -> Void) {
        self.configuration = configuration
        self.file = file
        self.cancellation = cancellation
        self.report = report
        self.segments = configuration.segments.map(EngineSegment.init)
        if let rate = configuration.request.maximumBytesPerSecond {
            limiter = .allocate(capacity: 1)
            limiter?.initialize(to: RateLimiter(bytesPerSecond: rate, now: MonotonicTime.now()))
        } else {
            limiter = nil
        }
        for segment in segments { segment.bestWritten = segment.state.written }
    }

    deinit {
        for buffer in spareBuffers { buffer.deallocate() }
        limiter?.deinitialize(count: 1)
        limiter?.deallocate()
    }

    /// Segment states as they stand: after ``run()`` returns or throws, every received byte has
    /// been passed to `pwrite` and is counted here.
    var segmentStates: [SegmentState] {
        segments.map(\.state).sorted { $0.range.lower < $1.range.lower }
    }

    /// Runs until every segment is complete; throws on a fatal failure, an exhausted retry
    /// budget or cancellation. Either way all buffered bytes are written before it returns.
    func run() throws(DownloadError) {
        cancellation.attach(multi)
        defer { cancellation.attach(nil) }
        do {
            try loop()
        } catch {
            stopAll()
            throw error
        }
    }

    private func loop() throws(DownloadError) {
        var nextProgress = 0.0
        var nextCheckpoint = MonotonicTime.now() + configuration.checkpointIntervalSeconds
        while true {
            if cancellation.isCancelled { throw .cancelled() }
            let now = MonotonicTime.now()
            schedule(now: now)
            resumePausedTransfers(now: now)
            multi.perform()
            let finished = multi.completedTransfers()
            for (handle, result) in finished {
                guard let transfer = active.removeValue(forKey: handle) else { continue }
                try complete(transfer, result: result)
            }
            // Refill freed connections now, not after the next poll's wait.
            if !finished.isEmpty { schedule(now: MonotonicTime.now()) }
            if active.isEmpty && segments.allSatisfy(\.isComplete) {
                report(.progress(receivedBytes: receivedBytes, contiguousBytes: segmentStates.contiguousPrefix, activeConnections: 0))
                return
            }
            if now >= nextProgress {
                replaceSlowTransfers(now: now)
                report(.progress(receivedBytes: receivedBytes, contiguousBytes: segmentStates.contiguousPrefix, activeConnections: active.count))
                nextProgress = now + configuration.progressIntervalSeconds
            }
            if now >= nextCheckpoint {
                report(.checkpoint(segmentStates))
                nextCheckpoint = now + configuration.checkpointIntervalSeconds
            }
            multi.poll(timeoutMilliseconds: pollTimeoutMilliseconds(now: now))
        }
    }

    private var receivedBytes: Int64 {
        segments.reduce(0) { $0 + $1.state.written + Int64($1.transfer?.buffered ?? 0) }
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

    private func pollTimeoutMilliseconds(now: Double) -> Int32 {
        if active.values.contains(where: \.isPaused) { return 5 }
        var waiting: Double?
        for segment in segments where segment.transfer == nil && !segment.isComplete && segment.readyAt > now {
            waiting = min(waiting ?? segment.readyAt, segment.readyAt)
        }
        guard let waiting else { return 100 }
        return Int32(max(1, min(100, (waiting - now) * 1000)))
    }

    // MARK: Scheduling

    private func schedule(now: Double) {
        while active.count < configuration.connections {
            if let next = segments.first(where: { $0.transfer == nil && !$0.isComplete && $0.readyAt <= now }) {
                start(next, now: now)
            } else if configuration.mode == .ranged, let stolen = stealLargestTail() {
                segments.append(stolen)
                start(stolen, now: now)
            } else {
                return
            }
        }
    }

    /// Splits the active segment with the most bytes outstanding and returns its second half
    /// as a new segment, or `nil` when no segment is worth splitting.
    private func stealLargestTail() -> EngineSegment? {
        let candidates = active.values.map { transfer -> (SegmentTransfer, ByteRange) in
            let next = transfer.segment.state.range.lower + transfer.segment.state.written + Int64(transfer.buffered)
            return (transfer, ByteRange(min(next, transfer.segment.state.range.upper), transfer.segment.state.range.upper))
        }
        guard let (victim, outstanding) = candidates.max(by: { $0.1.count < $1.1.count }),
              let split = configuration.planner.stealPoint(remaining: outstanding) else { return nil }
        let tail = ByteRange(split, victim.segment.state.range.upper)
        victim.segment.state.range.upper = split
        return EngineSegment(state: SegmentState(range: tail))
    }

    private func start(_ segment: EngineSegment, now: Double) {
        let requested: ByteRange? = configuration.mode == .ranged ? segment.state.remaining : nil
        if configuration.mode == .singleStream { segment.state.written = 0 }
        let transfer = SegmentTransfer(segment: segment, requested: requested, file: file, remote: configuration.remote,
                                       buffer: takeBuffer(), now: now)
        var extraHeaders: [String] = []
        if let requested {
            transfer.easy.set(CURLOPT_RANGE, requested.httpRangeSpec)
            // A file that changed since the probe answers 200 instead of 206: caught, never merged.
            if let validator = configuration.remote.ifRangeValidator { extraHeaders.append("If-Range: \(validator)") }
            extraHeaders.append("Accept-Encoding: identity")
        }
        transfer.limiter = limiter
        configuration.request.configure(transfer.easy, url: configuration.remote.finalURL, extraHeaders: extraHeaders)
        let userdata = Unmanaged.passUnretained(transfer).toOpaque()
        transfer.easy.setWriteCallback(segmentWriteCallback, userdata: userdata)
        transfer.easy.setHeaderCallback(segmentHeaderCallback, userdata: userdata)
        segment.transfer = transfer
        active[transfer.easy.handle] = transfer
        multi.add(transfer.easy)
    }

    // MARK: Completion

    private func complete(_ transfer: SegmentTransfer, result: CURLcode) throws(DownloadError) {
        let segment = transfer.segment
        multi.remove(transfer.easy)
        segment.transfer = nil
        if transfer.head.status != 0 { transfer.validateHead() }
        transfer.flush()
        spareBuffers.append(transfer.recyclableBuffer)
        if segment.state.written > segment.bestWritten {
            segment.bestWritten = segment.state.written
            segment.triesWithoutProgress = 0
            failuresWithoutProgress = 0
        }
        if transfer.overlong {
            report(.warning("\(configuration.remote.finalURL): server sent more bytes than the range \(transfer.requested?.httpRangeSpec ?? "") it announced; the excess was discarded"))
        }
        let duration = MonotonicTime.now() - transfer.startedAt
        if transfer.failure == nil && duration >= 0.25 && transfer.bytesReceived >= 256 << 10 {
            finishedSpeeds.append(Double(transfer.bytesReceived) / duration)
            if finishedSpeeds.count > 16 { finishedSpeeds.removeFirst() }
        }
        if let failure = transfer.failure {
            if failure.isFatal { throw failure.error }
            try retry(segment, after: failure.error, retryAfter: failure.error.retryAfterSeconds)
            return
        }
        if segment.isComplete { return }
        if configuration.mode == .singleStream && configuration.remote.size == nil && result == CURLE_OK {
            // Unknown length: the end of a successful body is the end of the file.
            segment.state.range.upper = segment.state.range.lower + segment.state.written
            return
        }
        let error: DownloadError
        if result == CURLE_OK {
            error = DownloadError(.protocolViolation, "\(configuration.remote.finalURL): connection closed after \(transfer.bytesReceived) of \(transfer.requested?.count ?? segment.state.range.count) bytes")
        } else {
            error = TransferFailure.curl(result, url: configuration.remote.finalURL, detail: nil)
        }
        guard result == CURLE_OK || TransferFailure.isRetryableDuringTransfer(result) else { throw error }
        try retry(segment, after: error, retryAfter: nil)
    }

    private func retry(_ segment: EngineSegment, after error: DownloadError, retryAfter: Double?) throws(DownloadError) {
        segment.triesWithoutProgress += 1
        failuresWithoutProgress += 1
        let tries = segment.triesWithoutProgress
        if tries >= configuration.retry.maximumTries || failuresWithoutProgress >= configuration.retry.maximumTries + configuration.connections {
            throw DownloadError(error.code, "\(error.message) — gave up after \(tries) tries")
        }
        let jitter = Double.random(in: 0...1, using: &randomState)
        let delay = configuration.retry.delay(beforeRetry: tries, retryAfterSeconds: retryAfter, jitter: jitter)
        segment.readyAt = MonotonicTime.now() + delay
        report(.retrying(RetryNotice(remaining: segment.state.remaining, retry: tries, delaySeconds: delay, reason: error.message)))
    }

    /// Aborts every transfer, keeping the valid bytes each had buffered.
    private func stopAll() {
        for transfer in active.values { detach(transfer) }
    }

    /// Removes a transfer from the multi handle mid-flight, keeping its valid buffered bytes.
    /// libcurl closes its connection, so a replacement request gets a fresh one.
    private func detach(_ transfer: SegmentTransfer) {
        multi.remove(transfer.easy)
        if transfer.failure == nil { transfer.flush() }
        transfer.segment.transfer = nil
        spareBuffers.append(transfer.recyclableBuffer)
        active.removeValue(forKey: transfer.easy.handle)
    }

    // MARK: Slow-tail hedging

    /// Replaces connections that stay far slower than the median of their siblings.
    private func replaceSlowTransfers(now: Double) {
        guard configuration.mode == .ranged else { return }
        let policy = configuration.hedging
        for transfer in active.values { transfer.sampleSpeed(now: now) }
        let judged = active.values.filter { now - $0.startedAt >= policy.graceSeconds && $0.bytesPerSecond >= 0 }
        let speeds = (judged.map(\.bytesPerSecond) + finishedSpeeds).sorted()
        guard !judged.isEmpty, speeds.count >= 2 else { return }
        let median = speeds[speeds.count / 2]
        guard median > 0 else { return }
        for transfer in judged {
            guard transfer.bytesPerSecond < median * policy.slowFraction else {
                transfer.slowSince = nil
                continue
            }
            let since = transfer.slowSince ?? now
            transfer.slowSince = since
            let segment = transfer.segment
            let remaining = segment.state.remaining.count - Int64(transfer.buffered)
            let secondsLeft = Double(remaining) / max(transfer.bytesPerSecond, 1)
            guard now - since >= policy.slowForSeconds, secondsLeft > policy.minimumRemainingSeconds,
                  segment.replacements < policy.maximumReplacements else { continue }
            segment.replacements += 1
            detach(transfer)
            segment.readyAt = now
            report(.warning("connection for bytes \(segment.state.remaining.httpRangeSpec) ran at \(ByteCount.format(Int64(transfer.bytesPerSecond)))/s against a median of \(ByteCount.format(Int64(median)))/s; replaced it with a fresh one"))
        }
    }

    private func takeBuffer() -> UnsafeMutableRawBufferPointer {
        spareBuffers.popLast()
            ?? UnsafeMutableRawBufferPointer.allocate(byteCount: configuration.writeBufferBytes, alignment: 4096)
    }
}
