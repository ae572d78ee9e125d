#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// A download into `NAME.part`, from the decided segments to the final name: free space,
/// preallocation, the journal, the engine's runs (another after a mirror failed its spot check),
/// the final `fdatasync`, the digests, the rename.
struct FileDownload {
    /// The URL requested (does it carry credentials?).
    let url: String
    let options: DownloadOptions
    let cancellation: CancellationFlag
    let engines: EngineBuilder
    /// The mirrors' spot checks after each run.
    let mirrors: MirrorAgreement
    /// The URL the journal names the download by (``ResolvedSource/journalURL``): the user's,
    /// also where its HTTP(S) form (an `s3://` URL's endpoint) is what goes on the wire.
    let journalURL: String
    /// When the session started, for the summary's elapsed time.
    let startedAt: Double
    let emit: @Sendable (DownloadEvent) -> Void

    /// Fetches `segments` of `remote` into `file` (open and locked) and renames it to
    /// `paths.final` once it is whole and its digests match `expected`.
    /// - Parameters:
    ///   - size: the file's size, `nil` when the server did not say (one stream, to its end).
    ///   - store: the journal, `nil` when this download keeps none (one stream).
    ///   - pieces: piece digests to check after each run (a metalink's), bad pieces fetched again.
    ///   - resumed: what a resumed journal brings beyond the segments: its block grid and the
    ///     pieces it recorded as proven.
    ///   - probedBytes: bytes of the written ones the probe brought in this run (the file's
    ///     first, ``DownloadSession/probeKeepsBytes``): transferred, not resumed.
    func run(remote: RemoteFile, size: Int64?, segments: [SegmentState], mode: EngineConfiguration.Mode,
             file: PartialFile, store: JournalStore?, paths: OutputPaths,
             expected: [(DigestValue, String)], pieces pieceDigests: Metalink.Pieces?,
             resumed journal: ResumedJournal = ResumedJournal(), probedBytes: Int64 = 0) throws(DownloadError) -> DownloadSummary {
        let resumed = segments.writtenBytes - probedBytes
        if let size {
            // A refusal before any byte leaves no empty NAME.part behind (a file of 0 bytes that
            // says nothing and that the next run would find), nor one of the probe's bytes alone.
            let fresh = resumed == 0 && (try? file.size()) == probedBytes
            do {
                try checkFreeSpace(paths: paths, file: file, size: size)
                try DownloadError.withSystemCalls { () throws(SystemCallError) in try file.preallocate(size: size) }
            } catch {
                if fresh { FileSystem.remove(paths.partial) }
                throw error
            }
        }
        var pieces = PieceRounds(digests: mode == .ranged ? pieceDigests : nil, proven: journal.verifiedPieces,
                                 resumed: segments, size: size ?? 0)
        let checkpointer = try startJournal(store: store, remote: remote, size: size, segments: segments, file: file,
                                            grid: journal.blockGrid, verified: pieces.verified)
        let hasher = expected.isEmpty ? nil : PrefixHasher(file: file, algorithms: expected.map(\.0.algorithm),
                                                                 cancellation: cancellation)
        defer { hasher?.stop() }
        emit(.started(DownloadStart(path: paths.final, totalBytes: size, resumedBytes: resumed,
                                    segments: segments.filter { !$0.isComplete }.count,
                                    connections: mode == .ranged ? options.connectionLimit : 1, segmented: mode == .ranged,
                                    adaptive: mode == .ranged && options.connections == .automatic)))

        // Direct writes keep the page cache out of the way, except while a digest follows the
        // download: the hasher reads the bytes back, and from the page cache that is nearly free
        // (from the disk it cost 0.7 s per GiB here).
        if hasher == nil { file.enableDirectWrites() }
        // Mirrors are checked beside the main URL's transfer, once for all of this download's runs.
        if mode == .ranged { mirrors.begin(with: remote) }
        defer { mirrors.finish() }
        var engine = engines.makeEngine(remote: remote, size: size, segments: segments, mode: mode, file: file,
                                        checkpointer: checkpointer, pieces: pieces.digests,
                                        follow: { hasher?.advance(to: $0) })
        // Set when a mirror's ranges were fetched again after the hasher may have read them.
        var rewritten = false
        var badPieces: DownloadError?
        while true {
            do {
                try engine.run()
                // Pieces proven as they arrived are not read back.
                pieces.prove(engine.provenPieces)
                var next = try mirrors.rangesToRefetch(mirrorExtents: engine.mirrorExtents, remote: remote, size: size,
                                                       file: file, expected: expected)
                if let plan = next, let size { pieces.forget(refetching: plan, size: size) }
                if next == nil, let size {
                    next = try pieces.refetch(file: file, size: size, mirrorExtents: engine.mirrorExtents, mainURL: url,
                                              mirrors: mirrors, cancellation: cancellation, emit: emit)
                    checkpointer?.noteVerified(pieces.verified)
                }
                // The bytes kept stay vouched for by their block CRCs in the records to come.
                if let plan = next, let grid = checkpointer?.blockGrid {
                    next = SegmentState.carryingBlocks(into: plan, from: engine.segmentStates, grid: grid)
                }
                if let next, pieces.exhausted {
                    // The journal must not claim the pieces that never came right.
                    try DownloadError.withSystemCalls { () throws(SystemCallError) in try checkpointer?.finish(next) }
                    badPieces = pieces.failure(path: paths.final)
                    break
                }
                guard let refetch = next else { break }
                rewritten = true
                // The journal must not claim the dropped mirror's ranges from here on.
                try DownloadError.withSystemCalls { () throws(SystemCallError) in try checkpointer?.finish(refetch) }
                engine = engines.makeEngine(remote: remote, size: size, segments: refetch, mode: mode, file: file,
                                            checkpointer: checkpointer, pieces: pieces.digests,
                                            follow: { hasher?.advance(to: $0) })
            } catch {
                if let checkpointer {
                    if error.code == .rangesNotHonoured {
                        // The journal is removed next and the file starts over as one stream: no
                        // checkpoint still queued may write it again.
                        checkpointer.stop()
                    } else {
                        pieces.prove(engine.provenPieces)
                        checkpointer.noteVerified(pieces.verified)
                        try? checkpointer.finish(engine.segmentStates, unchecked: mirrors.uncheckedMirrorBytes(engine.mirrorExtents))
                    }
                }
                if error.code == .cancelled, checkpointer == nil {
                    // No journal (a server without ranges, or a small file): nothing can be resumed.
                    let why = mode == .singleStream ? "the server does not serve byte ranges, so"
                        : options.journal ? "files under 2 MiB keep no journal, so" : "no journal was kept, so"
                    throw DownloadError(.cancelled, "interrupted after \(ByteCount.format(engine.segmentStates.writtenBytes)); \(why) running the command again starts from the beginning")
                }
                if error.code == .cancelled {
                    // Sizes as the bar shows them (MiB, GiB), not a count of bytes to read digit by digit.
                    let saved = ByteCount.format(engine.segmentStates.writtenBytes)
                    throw DownloadError(.cancelled, "interrupted; \(saved) of \(size.map(ByteCount.format) ?? "an unknown size") are saved in \(paths.partial)", remedy: .runAgainToResume)
                }
                throw error
            }
        }

        // No checkpoint may land after this point: the journal is removed once the file is whole.
        checkpointer?.stop()
        mirrors.finish()
        if let badPieces { throw badPieces }
        let lastByteAt = MonotonicTime.now()
        let finalSize = size ?? engine.segmentStates.writtenBytes
        try DownloadError.withSystemCalls { () throws(SystemCallError) in
            if size == nil { try file.truncate(to: finalSize) }
            try file.synchronize()
        }
        var verified: [DigestValue] = []
        var verificationSeconds: Double?
        if let hasher {
            var actual = try DownloadError.withSystemCalls { () throws(SystemCallError) in try hasher.finish(size: finalSize) }
            // Only a CRC was expected, so a lying mirror's ranges were spot-checked and fetched
            // again: the hasher followed the bytes first written, so the file is hashed afresh.
            if rewritten, !cancellation.isCancelled {
                actual = try FileDigester.digests(ofFileAt: file.path, algorithms: expected.map(\.0.algorithm),
                                                  cancellation: cancellation)
            }
            if cancellation.isCancelled {
                // The digest covers a prefix only: never compared, the bytes are kept for a rerun.
                throw DownloadError(.cancelled, "interrupted while checking the digest; the downloaded bytes are saved in \(paths.partial)", remedy: .runAgainToResume)
            }
            do {
                try DigestCheck.compare(expected: expected, actual: actual, path: paths.final)
            } catch {
                store?.remove()
                try? file.rename(to: paths.rejected)
                throw error.with(message: "\(error.message); the bytes received were kept as \(paths.rejected)")
            }
            verified = actual
            verificationSeconds = MonotonicTime.now() - lastByteAt
            for (want, source) in expected { emit(.verified(want, source: source)) }
        }
        // An S3 multipart upload's composite checksums, part by part, where the parts are known.
        if options.verifyAdvertisedDigests, let composites = remote.compositeChecksums {
            do {
                for (value, source) in try CompositeChecksumCheck.verify(composites, file: file, path: paths.final,
                                                                         cancellation: cancellation) {
                    emit(.verified(value, source: source))
                }
            } catch where error.code == .checksumMismatch {
                store?.remove()
                try? file.rename(to: paths.rejected)
                throw error.with(message: "\(error.message); the bytes received were kept as \(paths.rejected)")
            }
        }
        if options.request.carriesCredentials(for: url) {
            try DownloadError.withSystemCalls { () throws(SystemCallError) in try file.restoreUsualMode() }
        }
        try file.rename(to: paths.final)
        store?.remove()
        return DownloadSummary(path: paths.final, bytes: finalSize, transferredBytes: finalSize - resumed,
                               resumedBytes: resumed, elapsedSeconds: MonotonicTime.now() - startedAt,
                               verified: verified, alreadyComplete: false, segmented: mode == .ranged,
                               verificationSeconds: verificationSeconds)
    }

    /// What a resumed journal brings beyond its segments.
    struct ResumedJournal {
        /// The grid of the segments' block CRCs (`nil`: the file's usual one).
        var blockGrid: BlockGrid?
        /// The metalink pieces it recorded as proven.
        var verifiedPieces: JournalRecord.VerifiedPieces?
    }

    /// `remote` as the journal names it (``journalURL``).
    func identity(of remote: RemoteFile) -> FileIdentity {
        var named = remote.identity
        named.url = journalURL
        return named
    }

    /// Writes the first journal record (durably) and returns the checkpointer that keeps it
    /// current, or `nil` when this download keeps no journal.
    private func startJournal(store: JournalStore?, remote: RemoteFile, size: Int64?, segments: [SegmentState],
                              file: PartialFile, grid: BlockGrid?,
                              verified: JournalRecord.VerifiedPieces?) throws(DownloadError) -> Checkpointer? {
        guard let store, options.journal, let size, size >= DownloadSession.smallFileBytes else {
            store?.remove()
            return nil
        }
        var record = JournalRecord(file: identity(of: remote), size: size, segments: segments)
        if let grid { record.blockBytes = grid.blockBytes }
        let writer = Checkpointer(file: file, store: store, identity: record)
        writer.noteVerified(verified)
        try DownloadError.withSystemCalls { () throws(SystemCallError) in try writer.finish(segments) }
        return writer
    }

    private func checkFreeSpace(paths: OutputPaths, file: PartialFile, size: Int64) throws(DownloadError) {
        let allocated = (try? file.size()) ?? 0
        guard let available = FileSystem.availableBytes(at: FileSystem.directoryName(of: paths.partial)),
              size - allocated > available else { return }
        throw DownloadError(.fileSystem(errno: ENOSPC), "not enough free space for \(paths.final): need \(ByteCount.format(size - allocated)), \(ByteCount.format(available)) available")
    }
}
