#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// A download written in order to a stream (`-` or a FIFO, ``StreamTarget``): ranges fetched in
/// parallel within a reorder window, through a spool with no name, copied out as the prefix
/// grows (``OrderedStream``). No journal: a stream cannot be resumed.
struct StreamDownload {
    let options: DownloadOptions
    let cancellation: CancellationFlag
    let loop: CurlLoop
    let engines: EngineBuilder
    /// When the session started, for the summary's elapsed time.
    let startedAt: Double
    let emit: @Sendable (DownloadEvent) -> Void

    /// Where a stream's spool goes: `$TMPDIR`, else `/var/tmp` (on disk on Debian, unlike a
    /// `/tmp` that may be memory).
    static var spoolDirectory: String { Environment.value("TMPDIR") ?? "/var/tmp" }

    /// A stream's ranges: pieces of at most half a window per connection, so every connection
    /// has work inside the window and the first pieces go out early.
    static func streamPieceBytes(window: Int64, connections: Int) -> Int64 {
        let piece = window / Int64(2 * max(connections, 1))
        return max(1 << 20, min(16 << 20, piece / 4096 * 4096))
    }

    /// A stream's first pieces, one per connection; each round after doubles them up to
    /// ``streamPieceBytes(window:connections:)``. Small, so the first round fills in a moment
    /// at one connection's rate and the reader soon takes bytes at the aggregate rate (at
    /// 25 MiB/s a connection, 10 ms a piece against 80 ms for 2 MiB).
    static let streamHeadBytes: Int64 = 256 << 10

    /// Downloads `remote` into `target` in order.
    /// - Throws: ``DownloadError``: the transfer's, or the output's (a reader that went away).
    func run(_ remote: RemoteFile, to target: StreamTarget) throws(DownloadError) -> DownloadSummary {
        let expected = options.expectedDigests(for: remote)
        let spool = try DownloadError.withSystemCalls { () throws(SystemCallError) in try PartialFile(anonymousIn: Self.spoolDirectory) }
        let output: Int32
        do {
            output = try target.open()
        } catch {
            spool.close()
            throw error
        }
        // Closed only once the stream's copying has really ended (see OrderedStream.stop).
        var drained = false
        defer {
            if drained {
                close(output)
                spool.close()
            }
        }
        let loop = self.loop
        let cancellation = self.cancellation
        var algorithms = expected.map(\.0.algorithm)
        for algorithm in options.streamDigests where !algorithms.contains(algorithm) { algorithms.append(algorithm) }
        let stream = OrderedStream(spool: spool, output: output, outputName: target.name, window: options.streamWindowBytes,
                                   algorithms: algorithms) { failed in
            if failed { cancellation.cancel() }
            loop.wakeup()
        }
        defer { drained = stream.stop(waitingAtMost: Self.streamStopSeconds) }
        let ranged = remote.isSegmentable && remote.size != nil
        let size = remote.size
        // Pieces are planned as the window reaches them: a claimed size costs nothing up front.
        var segments: [SegmentState] = []
        var plan: StreamPlan?
        if ranged, let size {
            let connections = options.planningConnections
            plan = StreamPlan(size: size, pieceBytes: Self.streamPieceBytes(window: options.streamWindowBytes, connections: connections),
                              headBytes: Self.streamHeadBytes, round: connections)
        } else {
            segments = [SegmentState(range: ByteRange(0, size ?? Int64.max))]
        }
        let mode: EngineConfiguration.Mode = ranged ? .ranged : .singleStream
        let pieceCount = plan.map { Int(clamping: $0.pieceCount) } ?? 1
        emit(.started(DownloadStart(path: target.name, totalBytes: size, resumedBytes: 0, segments: pieceCount,
                                    connections: ranged ? options.connectionLimit : 1, segmented: ranged,
                                    adaptive: ranged && options.connections == .automatic)))
        if ranged { engines.mirrors.begin(with: remote) }
        defer { engines.mirrors.finish() }
        let window: @Sendable () -> Int64 = { stream.startLimit }
        let engine = engines.makeEngine(remote: remote, size: size, segments: segments, mode: mode, file: spool, checkpointer: nil,
                                        startLimit: ranged ? window : nil, laterPieces: plan, follow: { stream.advance(to: $0) })
        do throws(DownloadError) {
            try engine.run()
        } catch {
            if let failure = stream.failure { throw Self.streamFailure(failure, target: target, sent: stream.sentBytes) }
            if error.code == .cancelled {
                throw DownloadError(.cancelled, "interrupted after \(stream.sentBytes) bytes went to \(target.name); a stream keeps no journal, so running the command again starts from the beginning")
            }
            throw error
        }
        let finalSize = size ?? engine.segmentStates.writtenBytes
        let digests: [DigestValue]
        do throws(SystemCallError) {
            digests = try stream.finish(size: finalSize)
        } catch {
            throw Self.streamFailure(error, target: target, sent: stream.sentBytes)
        }
        var verified: [DigestValue] = []
        if !expected.isEmpty {
            verified = digests.filter { digest in expected.contains { $0.0.algorithm == digest.algorithm } }
            do {
                try DigestCheck.compare(expected: expected, actual: verified, path: target.name)
            } catch {
                throw error.with(message: "\(error.message); \(target.name) has already received these bytes")
            }
            for (want, source) in expected { emit(.verified(want, source: source)) }
        }
        return DownloadSummary(path: target.name, bytes: finalSize, transferredBytes: finalSize, resumedBytes: 0,
                               elapsedSeconds: MonotonicTime.now() - startedAt, verified: verified,
                               alreadyComplete: false, segmented: ranged, verificationSeconds: nil, streamed: true,
                               digests: digests, firstByteSeconds: stream.firstSentAt.map { max(0, $0 - startedAt) })
    }

    /// How long a stream that ends (done, failed or interrupted) waits for its copying to stop.
    static let streamStopSeconds = 2.0

    /// The output of a stream failed: a reader that went away, or a device error.
    private static func streamFailure(_ failure: SystemCallError, target: StreamTarget, sent: Int64) -> DownloadError {
        guard failure.errno == EPIPE else { return failure.downloadError }
        return DownloadError(.fileSystem(errno: EPIPE), "the reader of \(target.name) closed it after \(sent) bytes; the download stopped")
    }
}
