#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// One download from probe to rename, run start to finish on one thread.
///
/// Order of durable effects: bytes to `FINAL.part` (`pwrite`) → `fdatasync` → journal replaced
/// atomically → … → final `fdatasync` → digests checked → `rename` to `FINAL` → directory
/// `fsync` → journal removed. A crash at any point leaves either a resumable partial or the
/// complete file.
///
/// The session decides and delegates: ``SourceResolver`` probes, ``ResumeDecision`` says where
/// to start from what is on disk, ``FileDownload`` or ``StreamDownload`` carries the bytes (each
/// run's engine from ``EngineBuilder``, its mirrors from ``MirrorAgreement``).
final class DownloadSession {
    private let url: String
    private let options: DownloadOptions
    private let cancellation: CancellationFlag
    private let emit: @Sendable (DownloadEvent) -> Void
    private let startedAt = MonotonicTime.now()
    private let loop: CurlLoop
    private let sharing: BatchSharing?
    private let source: SourceResolver
    private let mirrors: MirrorAgreement
    private let files: FileDownload
    private let streams: StreamDownload
    /// The file changed during this run, which said so: a journal of the old version is
    /// discarded without another warning.
    private var restarting = false

    /// What a download in a batch shares with the others.
    struct BatchSharing {
        /// The worker's share of the batch's connection budget.
        var connections: WorkerConnections
        /// The file's place in the batch: earlier files get connections first.
        var priority: Int
        var claims: PathClaims
        /// Write buffers, used when their size is this file's (``writeBufferBytes(_:)``).
        var buffers: BufferPool
        /// Whether the probe keeps the file's first bytes (``probeKeepsBytes``): a list's files,
        /// not a queue's, whose downloads pause and change speed while they run (a probe does
        /// neither).
        var probeKeepsBytes = false
        /// Where files that come whole with their probe are made durable together with the
        /// batch's others (``SyncGroup``); `nil`: each is synced alone.
        var syncGroup: SyncGroup? = nil
        /// The directory the worker's files go into, held open from file to file (opened again
        /// for a file elsewhere): `NAME.part` is created in it without walking its path again.
        var directory: DirectoryHandle? = nil
    }

    /// Files smaller than this keep no journal: fetching them again costs less than the
    /// journal's own writes and syncs would.
    static let smallFileBytes: Int64 = 2 << 20

    /// A batch's files are probed by a `GET` of their first this many bytes, kept: a file this
    /// small comes whole in one request (written from memory, ``FileDownload/runWhole``), a
    /// larger one's download starts after them. Small enough that a large file's ranges start
    /// without waiting long for them (10 ms at 25 MiB/s).
    static let probeKeepsBytes = 256 << 10

    /// What the probe keeps: ``probeKeepsBytes`` in a batch that asks for it
    /// (``BatchSharing/probeKeepsBytes``: a list's, where many small files are the common case),
    /// for files a plain request describes (no mirrors, pieces, speed limit or standard output);
    /// `nil` (a `HEAD`) otherwise, and when the file is already there, whole or as `NAME.part`
    /// under the URL's name: its bytes are not fetched again to be compared.
    private var probeKeeps: Int? {
        guard sharing?.probeKeepsBytes == true, Self.probeMayKeepBytes(options) else { return nil }
        let name = options.nameSource.name(url: url, redirectedTo: nil, contentDisposition: nil)
        let path = OutputPaths.path(options.destination, suggestedName: name)
        guard FileSystem.kind(of: path, followingLinks: false) == .missing,
              FileSystem.kind(of: path + ".part", followingLinks: false) == .missing else { return nil }
        return Self.probeKeepsBytes
    }

    /// Whether a file downloaded with `options` is described by a plain request, whose probe may
    /// keep its first bytes: no mirrors, pieces, speed limit or standard output (a batch's lane
    /// asks it too, ``SmallFileLane``).
    static func probeMayKeepBytes(_ options: DownloadOptions) -> Bool {
        options.mirrors.isEmpty && options.pieceDigests == nil && options.request.speedControl == nil
            && options.request.maximumBytesPerSecond == nil && options.destination != .standardOutput
    }

    /// The first bytes the last probe brought (``Prober/Answer``), until the download takes them.
    private var probedPrefix: [UInt8] = []

    /// The probe's answer when another asked already (a batch's ``SmallFileLane``): taken by the
    /// first probe instead of asking again.
    private var givenAnswer: Prober.Answer?

    /// - Parameters:
    ///   - loop: the libcurl handle to run on (a batch worker reuses one, with its open
    ///     connections, for file after file).
    ///   - source: the user's URL resolved (``ResolvedSource``); `options` are bound to it
    ///     (``DownloadOptions/bound(to:)``).
    ///   - probed: what a probe of the URL answered already, with these options (its kept first
    ///     bytes are used only for a `NAME.part` this run creates): the first probe is not made.
    init(source resolved: ResolvedSource, options: DownloadOptions, cancellation: CancellationFlag, loop: CurlLoop,
         sharing: BatchSharing? = nil, probed: Prober.Answer? = nil, emit: @escaping @Sendable (DownloadEvent) -> Void) {
        let url = resolved.requestURL
        self.url = url
        givenAnswer = probed
        self.options = options
        self.cancellation = cancellation
        self.sharing = sharing
        self.loop = loop
        // Warnings name URLs only redacted (``DownloadWarning/message``).
        self.emit = emit
        source = SourceResolver(source: resolved, options: options, cancellation: cancellation, loop: loop, sharing: sharing, emit: emit)
        mirrors = MirrorAgreement(url: url, options: options, cancellation: cancellation, loop: loop, emit: emit)
        let engines = EngineBuilder(options: options, cancellation: cancellation, loop: loop, sharing: sharing,
                                    mirrors: mirrors, emit: emit)
        files = FileDownload(url: url, options: options, cancellation: cancellation, engines: engines, mirrors: mirrors,
                             journalURL: resolved.journalURL, startedAt: startedAt, emit: emit)
        streams = StreamDownload(options: options, cancellation: cancellation, loop: loop, engines: engines,
                                 startedAt: startedAt, emit: emit)
    }

    /// A file that changes on the server while it downloads is fetched again, whole, as its new
    /// version, at most this many times; then the download fails.
    static let maximumRestarts = 2

    func run() throws(DownloadError) -> DownloadSummary {
        var remote = try probe()
        var restarts = 0
        while true {
            do {
                return try download(remote)
            } catch where error.code == .remoteChanged && restarts < Self.maximumRestarts {
                // Bytes of two versions never mix: the journal names the old version, so the
                // next round (re-probed) starts from zero unless the server is back at it.
                restarts += 1
                restarting = true
                emit(.warning(.restartingChangedFile(reason: error.message, restart: restarts, of: Self.maximumRestarts)))
                remote = try probe()
            } catch where error.code == .remoteChanged {
                throw error.with(message: "\(error.message) — it changed \(restarts + 1) times during the download; try again later")
            }
        }
    }


    /// Probes the URL to request (``SourceResolver/probe()``), and reads the metalink its
    /// `Link: rel=describedby` header names, if any (``describe(_:by:)``).
    private func probe() throws(DownloadError) -> RemoteFile {
        let answer: Prober.Answer
        if let given = givenAnswer {
            answer = given
            givenAnswer = nil
        } else {
            answer = try source.probe(keepingUpTo: probeKeeps)
        }
        probedPrefix = answer.prefix
        var remote = answer.remote
        describedPieces = nil
        if options.verifyAdvertisedDigests, options.pieceDigests == nil, let link = remote.describedBy {
            try describe(&remote, by: link)
        }
        return remote
    }

    /// The piece digests of the metalink the server linked to (``describe(_:by:)``).
    private var describedPieces: Metalink.Pieces?

    /// Metalink/HTTP (RFC 6249): the metalink at `link` describes `remote`. Its URLs become
    /// duplicates (mirrors, under the usual agreement), its whole-file digests advertised digests
    /// (checked like a server's `Repr-Digest`), its pieces checked as a metalink's. One that
    /// cannot be fetched or read, or describes a file of another size, is warned about and not used.
    private func describe(_ remote: inout RemoteFile, by link: String) throws(DownloadError) {
        let shown = Redaction.url(link)
        let metalink: Metalink
        do {
            let answer = try SmallGet(request: options.request, cancellation: cancellation, loop: loop).fetch(link)
            guard answer.status == 200 else {
                emit(.warning(.describedByMetalinkUnused(url: shown, why: "the server answered \(answer.status)")))
                return
            }
            metalink = try Metalink.parse(answer.body, origin: shown)
        } catch where error.code == .cancelled {
            throw error
        } catch {
            emit(.warning(.describedByMetalinkUnused(url: shown, why: error.message)))
            return
        }
        if let size = metalink.size, let probed = remote.size, size != probed {
            emit(.warning(.describedByMetalinkUnused(url: shown, why: "it describes \(size) bytes, the URL serves \(probed)")))
            return
        }
        remote.duplicates += metalink.locations.map(\.url).filter { $0 != url && !remote.duplicates.contains($0) }
        remote.backupDuplicates += metalink.backupLocations.map(\.url).filter { $0 != url && !remote.backupDuplicates.contains($0) }
        for digest in metalink.digests where !remote.advertisedDigests.contains(where: { $0.algorithm == digest.algorithm }) {
            remote.advertisedDigests.append(AdvertisedDigest(algorithm: digest.algorithm, hex: digest.hex, header: "metalink (Link: rel=describedby)"))
        }
        describedPieces = metalink.pieces
    }

    private func download(_ remote: RemoteFile) throws(DownloadError) -> DownloadSummary {
        emit(.probed(remote))
        if let target = remote.redirectedTo, SourceAddress.downgradesToPlainHTTP(from: url, to: target) {
            emit(.warning(.redirectedToPlainHTTP(url: Redaction.url(url), target: Redaction.url(target))))
        }
        if let expected = options.expectedSize, let size = remote.size, size != expected {
            throw DownloadError(.checksumMismatch, "\(Redaction.url(url)) serves \(size) bytes, not the \(expected) bytes expected (the metalink's <size>); nothing was downloaded", url: url)
        }
        if let warning = remote.decodingWarning { emit(.warning(warning)) }
        if options.verifyAdvertisedDigests {
            let streaming = options.destination == .standardOutput
            for warning in remote.compositeChecksumWarnings(streaming: streaming) { emit(.warning(warning)) }
        }
        if !remote.isSegmentable && remote.decodingWarning == nil {
            let why = remote.acceptsRanges ? "did not say how large the file is" : "does not serve byte ranges"
            emit(.warning(.oneStream(url: Redaction.url(url), why: why)))
        }
        let followsLink = OutputPaths.followsLink(options.destination, options: options)
        // What is at a name rangefetch chose, looked at once (`lstat`) for every check below.
        var found: FileSystem.Kind?
        if !followsLink, options.destination != .standardOutput {
            // A name rangefetch chose (from the URL, a server or a list) is only ever written as a
            // new regular file: a FIFO or device planted there would receive the download.
            let chosen = OutputPaths.path(options.destination, suggestedName: remote.suggestedName)
            found = FileSystem.kind(of: chosen, followingLinks: false)
            if found == .other {
                throw DownloadError(.outputExists, "\(chosen) is not a regular file (a FIFO, socket or device); nothing was written to it", remedy: .removeStrayFile)
            }
        }
        if let target = StreamTarget(destination: options.destination, suggestedName: remote.suggestedName,
                                     followsLink: followsLink, found: found) {
            return try streams.run(remote, to: target)
        }
        let paths = try OutputPaths(destination: options.destination, suggestedName: remote.suggestedName,
                                    followsLink: followsLink, found: found)
        try OutputPaths.checkFinalPath(paths.final, found: found)
        if let sharing, let other = sharing.claims.claim(paths.final, by: sharing.priority) {
            throw DownloadError(.invalidOption, "\(url) would be saved as \(paths.final), like entry \(other + 1) of this batch; give one of them another name (out=)", url: url)
        }
        let store = JournalStore(path: paths.journal)
        let expected = options.expectedDigests(for: remote)

        var adoptedPrefix: Int64 = 0
        // Entries as they are, links not followed (a followed -o path was resolved above).
        if (found ?? FileSystem.kind(of: paths.final, followingLinks: false)) == .regular
            && FileSystem.kind(of: paths.partial, followingLinks: false) == .missing {
            store.remove() // stale: left by a crash between the final rename and its removal
            let existing = FileSystem.size(of: paths.final)
            switch try ResumeDecision.finalFile(policy: options.existingFile, path: paths.final, existingBytes: existing,
                                                trust: FileTrust(entryAt: paths.final), remote: remote) {
            case .complete(let size):
                return try reportComplete(paths: paths, size: size, expected: expected)
            case .replace:
                break
            case .adopt(let prefixBytes):
                // Foreign bytes are refused before anything moves: the file stays as it was.
                try ExistingPrefixCheck(fetcher: SmallGet(request: options.request, cancellation: cancellation, loop: loop))
                    .check(path: paths.final, prefixBytes: prefixBytes, remote: remote)
                try DownloadError.withSystemCalls { () throws(SystemCallError) in
                    try FileSystem.durableRename(paths.final, to: paths.partial)
                }
                emit(.warning(.continuingExistingFile(bytes: prefixBytes, path: paths.final)))
                adoptedPrefix = prefixBytes
            }
        }

        let file = try PartialFile(path: paths.partial, privateMode: options.request.carriesCredentials(for: url),
                                   in: sharing?.directory)
        guard try DownloadError.withSystemCalls({ () throws(SystemCallError) in try file.tryLock() }) else {
            throw DownloadError(.busy, "\(paths.partial) is in use by another rangefetch process", remedy: .waitOrChooseOtherOutput)
        }
        defer { file.close() }
        // The probe's bytes start only an empty file, held locked (not one resumed or adopted).
        let fresh = adoptedPrefix == 0 && (file.created || (try? file.size()) == 0)
        let prefix = fresh ? probedPrefix : []
        probedPrefix = []
        // (Composite checksums are checked from the file, on the usual path.)
        if !prefix.isEmpty, Prober.Answer(remote: remote, prefix: prefix).isWhole, describedPieces == nil,
           remote.compositeChecksums == nil {
            let summary = try files.runWhole(remote: remote, body: prefix, file: file, paths: paths, expected: expected,
                                             group: sharing?.syncGroup)
            store.remove() // stale, as a small file's on the usual path
            return summary
        }
        var probedBytes: Int64 = 0
        if !prefix.isEmpty, remote.isSegmentable, let size = remote.size, Int64(prefix.count) < size {
            // The start of the file, as a prefix the plan begins after (as an adopted one): durable
            // before a journal can claim it.
            do {
                try DownloadError.withSystemCalls { () throws(SystemCallError) in
                    try prefix.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try file.write(raw, at: 0) } }.get()
                    if size >= Self.smallFileBytes { try file.synchronize() }
                }
            } catch {
                // Nothing worth resuming: no NAME.part is left for the next run to find.
                FileSystem.remove(paths.partial)
                throw error
            }
            adoptedPrefix = Int64(prefix.count)
            probedBytes = adoptedPrefix
        }

        if remote.isSegmentable, let size = remote.size {
            let planner = SegmentPlanner(
                connections: options.planningConnections, minimumSegmentBytes: options.minimumSegmentBytes,
                pieceBytes: SegmentPlanner.pieceBytes(size: size, connections: options.planningConnections, hashing: !expected.isEmpty))
            let (segments, resumed) = try resumePoint(file: file, store: store, remote: remote, size: size,
                                                      planner: planner, adoptedPrefix: adoptedPrefix)
            do {
                return try files.run(remote: remote, size: size, segments: segments, mode: .ranged, file: file,
                                     store: store, paths: paths, expected: expected, pieces: options.pieceDigests ?? describedPieces,
                                     resumed: resumed, probedBytes: probedBytes)
            } catch where error.code == .rangesNotHonoured {
                emit(.warning(.rangesAbandoned(reason: error.message)))
            }
        }
        store.remove()
        try DownloadError.withSystemCalls { () throws(SystemCallError) in try file.truncate(to: 0) }
        let whole = SegmentState(range: ByteRange(0, remote.size ?? Int64.max))
        return try files.run(remote: remote, size: remote.size, segments: [whole], mode: .singleStream, file: file,
                             store: nil, paths: paths, expected: expected, pieces: nil)
    }

    /// The segments to fetch (``ResumeDecision/partialFile(_:)``): the partial file is truncated
    /// when it starts over, and the reason is said. Resumed bytes are kept as far as their block
    /// CRCs check out (``ResumeBlocks``).
    private func resumePoint(file: PartialFile, store: JournalStore, remote: RemoteFile, size: Int64,
                             planner: SegmentPlanner,
                             adoptedPrefix: Int64) throws(DownloadError) -> ([SegmentState], FileDownload.ResumedJournal) {
        let partialSize = try DownloadError.withSystemCalls { () throws(SystemCallError) in try file.size() }
        // The journal is read only when it could be used.
        let journal = adoptedPrefix == 0 && options.resume == .resume ? store.load() : nil
        let partial = ResumeDecision.Partial(path: file.path, bytes: partialSize, adoptedPrefixBytes: adoptedPrefix,
                                             journal: journal, remote: remote, identity: files.identity(of: remote),
                                             size: size, restarting: restarting, planner: planner)
        switch ResumeDecision.partialFile(partial) {
        case .resume(var segments, let unchecked):
            mirrors.resumedUnchecked = unchecked
            var resumed = FileDownload.ResumedJournal()
            if case .record(let record) = journal {
                resumed = FileDownload.ResumedJournal(blockGrid: record.blockGrid, verifiedPieces: record.verifiedPieces)
                // A version 2 record vouches for written bytes with CRCs only: none means none.
                if record.version >= 2 { segments = segments.map { SegmentState(range: $0.range, written: $0.written, blocks: $0.blocks ?? []) } }
            }
            let grid = resumed.blockGrid ?? BlockGrid(fileSize: size)
            let reader = BlockReader(file: file, grid: grid, cancellation: cancellation)
            var found: [[UInt32]] = []
            for segment in segments { found.append(try reader.crcs(of: segment)) }
            let outcome = ResumeBlocks.decide(segments, grid: grid, found: found)
            if outcome.refusedBytes > 0 {
                emit(.warning(.resumedBytesRefused(path: file.path, bytes: outcome.refusedBytes, blocks: outcome.mismatchedBlocks)))
            }
            resumed.blockGrid = grid
            return (outcome.segments, resumed)
        case .startOver(let segments, let reason):
            if let reason { emit(.warning(.startingOver(reason: reason))) }
            try DownloadError.withSystemCalls { () throws(SystemCallError) in try file.truncate(to: 0) }
            return (segments, FileDownload.ResumedJournal())
        }
    }

    /// A file already at the final path that is this download, complete: reported once its
    /// digests, if any, match.
    private func reportComplete(paths: OutputPaths, size: Int64,
                                expected: [(DigestValue, String)]) throws(DownloadError) -> DownloadSummary {
        var verified: [DigestValue] = []
        if !expected.isEmpty {
            let actual = try FileDigester.digests(ofFileAt: paths.final, algorithms: expected.map(\.0.algorithm),
                                                  cancellation: cancellation)
            try DigestCheck.compare(expected: expected, actual: actual, path: paths.final)
            verified = actual
        }
        return DownloadSummary(path: paths.final, bytes: size, transferredBytes: 0, resumedBytes: size,
                               elapsedSeconds: MonotonicTime.now() - startedAt, verified: verified,
                               alreadyComplete: true, segmented: false, verificationSeconds: nil)
    }

    /// The per-connection coalescing buffer: the configured size, shrunk for many connections so
    /// that all buffers together stay near 8 MiB (never under 128 KiB each). Under `-n auto` the
    /// count planned for, not the ceiling: halving every buffer for connections a fast link never
    /// opens cost 25% on loopback (twice the `pwrite`s); a capped link that does grow to 64 holds
    /// 16 MiB of buffers then.
    static func writeBufferBytes(_ options: DownloadOptions) -> Int {
        min(options.writeBufferBytes, max(128 << 10, (8 << 20) / options.planningConnections))
    }
}

extension DownloadSession.BatchSharing {
    /// This file's access to the batch's connections for requests to `host`.
    func lease(host: String?) -> ConnectionLease {
        ConnectionLease(worker: connections, host: host ?? "", priority: priority)
    }
}
