#if canImport(Glibc)
import Glibc
#endif

/// One download from probe to rename, run start to finish on one thread.
///
/// Order of durable effects: bytes to `FINAL.part` (`pwrite`) → `fdatasync` → journal replaced
/// atomically → … → final `fdatasync` → digests checked → `rename` to `FINAL` → directory
/// `fsync` → journal removed. A crash at any point leaves either a resumable partial or the
/// complete file.
final class DownloadSession {
    private let url: String
    private let options: DownloadOptions
    private let cancellation: CancellationFlag
    private let emit: @Sendable (DownloadEvent) -> Void
    private let startedAt = MonotonicTime.now()
    private let multi: CurlLoop
    private let sharing: BatchSharing?
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
    }

    /// Files smaller than this keep no journal: fetching them again costs less than the
    /// journal's own writes and syncs would.
    static let smallFileBytes: Int64 = 2 << 20

    /// The URL the journal names when it is not the one requested: an `s3://` URL, whose
    /// HTTP(S) form is what goes on the wire.
    private let journalURL: String?

    /// - Parameters:
    ///   - multi: the libcurl handle to run on (a batch worker reuses one, with its open
    ///     connections, for file after file).
    ///   - journalURL: see ``journalURL``.
    init(url: String, options: DownloadOptions, cancellation: CancellationFlag, multi: CurlLoop,
         sharing: BatchSharing? = nil, journalURL: String? = nil, emit: @escaping @Sendable (DownloadEvent) -> Void) {
        self.url = url
        self.journalURL = journalURL
        self.options = options
        self.cancellation = cancellation
        self.multi = multi
        self.sharing = sharing
        // Warnings name URLs: never with a password or signature in them.
        self.emit = { event in
            if case .warning(let message) = event { emit(.warning(Redaction.text(message))) } else { emit(event) }
        }
    }

    /// The URL to request and the options for `url`: an `s3://BUCKET/KEY` becomes its object's
    /// HTTP(S) URL, with every request signed (``S3Configuration``); others are unchanged.
    /// The options' secrets are bound to the origin of the URL to request (see ``CredentialScope``).
    static func prepare(url: String, options: DownloadOptions) throws(DownloadError) -> (url: String, options: DownloadOptions) {
        guard let location = try SourceAddress(url).s3 else {
            var options = options
            // A batch's S3 configuration is for its s3:// files: another URL's refusals are not S3's.
            options.s3 = nil
            try options.request.bindSecrets(to: url)
            return (url, options)
        }
        guard !location.isPrefix else {
            throw DownloadError(.invalidURL, "\(url) names a prefix, not an object", remedy: .fetchPrefixAsBatch)
        }
        var options = options
        let configuration: S3Configuration
        if let given = options.s3 { configuration = given } else { configuration = try S3Configuration.load() }
        options.s3 = configuration
        options.request.s3Signer = configuration.signer
        let endpointURL = configuration.url(bucket: location.bucket, key: location.key)
        try options.request.bindSecrets(to: endpointURL)
        return (endpointURL, options)
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
                emit(.warning("\(error.message); downloading the new version from the start (restart \(restarts) of \(Self.maximumRestarts))"))
                remote = try probe()
            } catch where error.code == .remoteChanged {
                throw DownloadError(error.code, "\(error.message) — it changed \(restarts + 1) times during the download; try again later", remedy: error.remedy)
            }
        }
    }

    private func download(_ remote: RemoteFile) throws(DownloadError) -> DownloadSummary {
        emit(.probed(remote))
        if let warning = remote.decodingWarning { emit(.warning(warning)) }
        if !remote.isSegmentable && remote.decodingWarning == nil {
            let why = remote.acceptsRanges ? "did not say how large the file is" : "does not serve byte ranges"
            emit(.warning("\(Redaction.url(url)): the server \(why), so the download is one stream on one connection, and an interruption starts it over"))
        }
        let followsLink = OutputPaths.followsLink(options.destination, options: options)
        if !followsLink, options.destination != .standardOutput {
            // A name rangefetch chose (from the URL, a server or a list) is only ever written as a
            // new regular file: a FIFO or device planted there would receive the download.
            let chosen = OutputPaths.path(options.destination, suggestedName: remote.suggestedName)
            if FileSystem.kind(of: chosen, followingLinks: false) == .other {
                throw DownloadError(.outputExists, "\(chosen) is not a regular file (a FIFO, socket or device); nothing was written to it", remedy: .removeStrayFile)
            }
        }
        if let target = StreamTarget(destination: options.destination, suggestedName: remote.suggestedName,
                                     followsLink: followsLink) {
            return try stream(remote, to: target)
        }
        let paths = try OutputPaths(destination: options.destination, suggestedName: remote.suggestedName,
                                    followsLink: followsLink)
        try OutputPaths.checkFinalPath(paths.final)
        if let sharing, let other = sharing.claims.claim(paths.final, by: sharing.priority, url: url) {
            throw DownloadError(.invalidOption, "\(url) would be saved as \(paths.final), like entry \(other.index + 1) of this batch (\(other.url)); give one of them another name (out=)")
        }
        let store = JournalStore(path: paths.journal)
        let expected = expectedDigests(remote)

        var adoptedPrefix: Int64 = 0
        // Entries as they are, links not followed (a followed -o path was resolved above).
        if FileSystem.kind(of: paths.final, followingLinks: false) == .regular
            && FileSystem.kind(of: paths.partial, followingLinks: false) == .missing {
            store.remove() // stale: left by a crash between the final rename and its removal
            switch options.existingFile {
            case .refuse:
                return try reportExisting(paths: paths, remote: remote, expected: expected)
            case .overwrite:
                break
            case .continueFrom:
                adoptedPrefix = try adopt(paths: paths, remote: remote)
            }
        }

        let file = try PartialFile(path: paths.partial, privateMode: options.request.carriesCredentials(for: url))
        guard try wrap({ () throws(SystemCallError) in try file.tryLock() }) else {
            throw DownloadError(.busy, "\(paths.partial) is in use by another rangefetch process", remedy: .waitOrChooseOtherOutput)
        }
        defer { file.close() }

        if remote.isSegmentable, let size = remote.size {
            let planner = SegmentPlanner(
                connections: options.connectionLimit, minimumSegmentBytes: options.minimumSegmentBytes,
                pieceBytes: SegmentPlanner.pieceBytes(size: size, connections: options.connectionLimit, hashing: !expected.isEmpty))
            let segments = try resumePoint(file: file, store: store, remote: remote, size: size,
                                           planner: planner, adoptedPrefix: adoptedPrefix)
            do {
                return try transfer(remote: remote, size: size, segments: segments, mode: .ranged, file: file,
                                    store: store, paths: paths, expected: expected)
            } catch where error.code == .rangesNotHonoured {
                emit(.warning("\(error.message); downloading as one stream"))
            }
        }
        store.remove()
        try wrap { () throws(SystemCallError) in try file.truncate(to: 0) }
        let whole = SegmentState(range: ByteRange(0, remote.size ?? Int64.max))
        return try transfer(remote: remote, size: remote.size, segments: [whole], mode: .singleStream, file: file,
                            store: nil, paths: paths, expected: expected)
    }

    /// This file's access to the batch's connections for requests to `host`; `nil` outside a batch.
    private func lease(host: String?) -> ConnectionLease? {
        sharing.map { ConnectionLease(worker: $0.connections, host: host ?? "", priority: $0.priority) }
    }

    /// Probes, retrying transient failures (5xx, 408, 429, resets) with the retry policy.
    private func probe() throws(DownloadError) -> RemoteFile {
        let prober = Prober(request: options.request, cancellation: cancellation, multi: multi, names: options.nameSource)
        var retries = 0
        while true {
            do throws(DownloadError) {
                // In a batch the probe's connection counts like any other: it waits for room.
                let lease = lease(host: URLParts(url)?.origin)
                if let lease {
                    while !lease.acquire() {
                        if cancellation.isCancelled { throw DownloadError.cancelled() }
                        usleep(5_000)
                    }
                }
                defer {
                    lease?.release()
                    lease?.settle(open: multi.openConnections)
                }
                do {
                    return try prober.probe(url)
                } catch where options.s3 != nil && error.httpStatus.map({ $0 >= 400 }) == true {
                    throw s3Failure(error)
                }
            } catch where error.isTransient && retries + 1 < options.retry.maximumTries {
                retries += 1
                let delay = options.retry.delay(beforeRetry: retries, retryAfterSeconds: error.retryAfterSeconds,
                                                jitter: Double.random(in: 0...1))
                emit(.retrying(RetryNotice(remaining: nil, retry: retries, delaySeconds: delay, reason: error.message)))
                let until = MonotonicTime.now() + delay
                while MonotonicTime.now() < until {
                    if cancellation.isCancelled { throw .cancelled() }
                    usleep(20_000)
                }
            }
        }
    }

    /// An S3 refusal with S3's own error code and message, read from a GET's body (a HEAD has none).
    private func s3Failure(_ error: DownloadError) -> DownloadError {
        guard let configuration = options.s3,
              let answer = try? S3Client(configuration: configuration, request: options.request, cancellation: cancellation,
                                         multi: multi).get(url),
              let detail = S3Client.errorDetail(answer.body) else { return error }
        return DownloadError(error.code, "\(error.message); S3 said \(detail)", remedy: error.remedy)
    }

    // MARK: Deciding where to start

    /// The segments to fetch: the journal's when it describes this very file, else a new plan.
    private func resumePoint(file: PartialFile, store: JournalStore, remote: RemoteFile, size: Int64,
                             planner: SegmentPlanner, adoptedPrefix: Int64) throws(DownloadError) -> [SegmentState] {
        let partialSize = try wrap { () throws(SystemCallError) in try file.size() }
        if adoptedPrefix > 0 {
            let rest = planner.plan(size: size - adoptedPrefix).map {
                SegmentState(range: ByteRange($0.lower + adoptedPrefix, $0.upper + adoptedPrefix))
            }
            return [SegmentState(range: ByteRange(0, adoptedPrefix), written: adoptedPrefix)] + rest
        }
        var reason: String?
        if options.resume == .resume {
            switch store.load() {
            case .record(let record) where record.matches(named(remote)) && partialSize == size:
                resumedUnchecked = record.uncheckedMirrorBytes ?? [:]
                return record.segments
            case .record(let record) where record.url != Redaction.url(named(remote).url):
                reason = "\(file.path) belongs to a download of \(record.url), not \(remote.url)"
            case .record(let record) where !record.matches(named(remote)) && restarting:
                break
            case .record(let record) where !record.matches(named(remote)):
                reason = "the file on the server changed since the partial download (\(Self.versionText(record.size, record.etag, record.lastModified)) → \(Self.versionText(size, remote.etag, remote.lastModified)))"
            case .record:
                reason = "\(file.path) is \(partialSize) bytes but its journal expects \(size)"
            case .unreadable(let problem):
                reason = "ignoring an unusable journal (\(problem))"
            case .missing:
                if partialSize > 0 && size >= Self.smallFileBytes { reason = "\(file.path) has no journal, so its bytes cannot be trusted" }
            }
        } else if partialSize > 0 {
            reason = "a restart was asked for"
        }
        if let reason { emit(.warning("\(reason); starting over")) }
        try wrap { () throws(SystemCallError) in try file.truncate(to: 0) }
        return planner.plan(size: size).map { SegmentState(range: $0) }
    }

    /// `remote` as the journal names it (``journalURL``).
    private func named(_ remote: RemoteFile) -> RemoteFile {
        var named = remote
        if let journalURL { named.url = journalURL }
        return named
    }

    private static func versionText(_ size: Int64, _ etag: String?, _ lastModified: String?) -> String {
        "\(size) bytes" + (etag.map { ", ETag \($0)" } ?? "") + (lastModified.map { ", \($0)" } ?? "")
    }

    /// A file already at the final path with no journal: complete (report it) or refuse.
    private func reportExisting(paths: OutputPaths, remote: RemoteFile,
                                expected: [(DigestValue, String)]) throws(DownloadError) -> DownloadSummary {
        let existing = FileSystem.size(of: paths.final) ?? -1
        // Someone else's file of the right size is not this download, whatever its bytes.
        if case .ownedBy = FileTrust(entryAt: paths.final), let problem = FileTrust(entryAt: paths.final)?.problem(at: paths.final) {
            throw DownloadError(.outputExists, "\(problem); it is not taken as this download", remedy: .removeStrayFile)
        }
        guard let size = remote.size, existing == size else {
            throw DownloadError(.outputExists, "\(paths.final) already exists (\(existing) bytes; the server has \(remote.size.map(String.init) ?? "an unknown number of") bytes)", remedy: .continueOrOverwrite)
        }
        var verified: [DigestValue] = []
        if !expected.isEmpty {
            let actual = try FileDigester.digests(ofFileAt: paths.final, algorithms: expected.map(\.0.algorithm),
                                                      cancellation: cancellation)
            try DigestCheck.compare(expected: expected, actual: actual, path: paths.final)
            verified = actual
        }
        let summary = DownloadSummary(path: paths.final, bytes: size, transferredBytes: 0, resumedBytes: size,
                                      elapsedSeconds: MonotonicTime.now() - startedAt, verified: verified,
                                      alreadyComplete: true, segmented: false, verificationSeconds: nil)
        return summary
    }

    /// `--continue`: the existing final file becomes the partial file's verified-by-validators prefix.
    private func adopt(paths: OutputPaths, remote: RemoteFile) throws(DownloadError) -> Int64 {
        let existing = FileSystem.size(of: paths.final) ?? 0
        guard remote.isSegmentable, let size = remote.size else {
            throw DownloadError(.outputExists, "\(paths.final) exists and the server does not serve ranges, so it cannot be continued", remedy: .overwrite)
        }
        guard existing <= size else {
            throw DownloadError(.outputExists, "\(paths.final) (\(existing) bytes) is larger than the file on the server (\(size) bytes)", remedy: .overwrite)
        }
        // Its bytes are taken only when they are this user's alone, like a partial file's.
        if let trust = FileTrust(entryAt: paths.final), trust != .own {
            throw DownloadError(.fileSystem(errno: trust.errno), "\(trust.problem(at: paths.final) ?? paths.final), so its bytes are not continued from", remedy: .removeStrayFile)
        }
        try wrap { () throws(SystemCallError) in try FileSystem.durableRename(paths.final, to: paths.partial) }
        emit(.warning("continuing from the \(existing) bytes already in \(paths.final)"))
        return existing
    }

    // MARK: Transfer, verify, commit

    private func transfer(remote: RemoteFile, size: Int64?, segments: [SegmentState], mode: EngineConfiguration.Mode,
                          file: PartialFile, store: JournalStore?, paths: OutputPaths,
                          expected: [(DigestValue, String)]) throws(DownloadError) -> DownloadSummary {
        let resumed = segments.writtenBytes
        if let size {
            try checkFreeSpace(paths: paths, file: file, size: size)
            try wrap { () throws(SystemCallError) in try file.preallocate(size: size) }
        }
        let checkpointer = try startJournal(store: store, remote: remote, size: size, segments: segments, file: file)
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
        var engine = makeEngine(remote: remote, size: size, segments: segments, mode: mode, file: file,
                                checkpointer: checkpointer, follow: { hasher?.advance(to: $0) })
        while true {
            do {
                try engine.run()
                guard let refetch = try rangesToRefetch(engine, remote: remote, size: size, file: file, expected: expected) else { break }
                // The journal must not claim the dropped mirror's ranges from here on.
                try wrap { () throws(SystemCallError) in try checkpointer?.finish(refetch) }
                engine = makeEngine(remote: remote, size: size, segments: refetch, mode: mode, file: file,
                                    checkpointer: checkpointer, follow: { hasher?.advance(to: $0) })
            } catch {
                if let checkpointer {
                    if error.code == .rangesNotHonoured {
                        // The journal is removed next and the file starts over as one stream: no
                        // checkpoint still queued may write it again.
                        checkpointer.stop()
                    } else {
                        try? checkpointer.finish(engine.segmentStates, unchecked: uncheckedMirrorBytes(engine.mirrorExtents))
                    }
                }
                if error.code == .cancelled, checkpointer == nil {
                    // No journal (a server without ranges, or a small file): nothing can be resumed.
                    let why = mode == .singleStream ? "the server does not serve byte ranges, so"
                        : options.journal ? "files under 2 MiB keep no journal, so" : "no journal was kept, so"
                    throw DownloadError(.cancelled, "interrupted after \(engine.segmentStates.writtenBytes) bytes; \(why) running the command again starts from the beginning")
                }
                if error.code == .cancelled {
                    throw DownloadError(.cancelled, "interrupted; \(engine.segmentStates.writtenBytes) of \(size.map(String.init) ?? "?") bytes are saved in \(paths.partial)", remedy: .runAgainToResume)
                }
                throw error
            }
        }

        // No checkpoint may land after this point: the journal is removed once the file is whole.
        checkpointer?.stop()
        let lastByteAt = MonotonicTime.now()
        let finalSize = size ?? engine.segmentStates.writtenBytes
        try wrap { () throws(SystemCallError) in
            if size == nil { try file.truncate(to: finalSize) }
            try file.synchronize()
        }
        var verified: [DigestValue] = []
        var verificationSeconds: Double?
        if let hasher {
            let actual = try wrap { () throws(SystemCallError) in try hasher.finish(size: finalSize) }
            if cancellation.isCancelled {
                // The digest covers a prefix only: never compared, the bytes are kept for a rerun.
                throw DownloadError(.cancelled, "interrupted while checking the digest; the downloaded bytes are saved in \(paths.partial)", remedy: .runAgainToResume)
            }
            do {
                try DigestCheck.compare(expected: expected, actual: actual, path: paths.final)
            } catch {
                store?.remove()
                try? file.rename(to: paths.rejected)
                throw DownloadError(error.code, "\(error.message); the bytes received were kept as \(paths.rejected)", remedy: error.remedy)
            }
            verified = actual
            verificationSeconds = MonotonicTime.now() - lastByteAt
            for (want, source) in expected { emit(.verified(want, source: source)) }
        }
        if options.request.carriesCredentials(for: url) {
            try wrap { () throws(SystemCallError) in try file.restoreUsualMode() }
        }
        try file.rename(to: paths.final)
        store?.remove()
        return DownloadSummary(path: paths.final, bytes: finalSize, transferredBytes: finalSize - resumed,
                               resumedBytes: resumed, elapsedSeconds: MonotonicTime.now() - startedAt,
                               verified: verified, alreadyComplete: false, segmented: mode == .ranged,
                               verificationSeconds: verificationSeconds)
    }

    /// The engine for one run over `segments` into `file`, its events turned into progress,
    /// checkpoints and messages.
    /// - Parameters:
    ///   - startLimit: a stream's reorder window (see ``EngineConfiguration/startLimit``).
    ///   - laterPieces: a stream's pieces, planned as the window reaches them.
    ///   - follow: told how long the written prefix `[0, n)` has grown (a digest or a stream
    ///     follows it).
    private func makeEngine(remote: RemoteFile, size: Int64?, segments: [SegmentState], mode: EngineConfiguration.Mode,
                            file: PartialFile, checkpointer: Checkpointer?, startLimit: (@Sendable () -> Int64)? = nil,
                            laterPieces: StreamPlan? = nil, follow: @escaping @Sendable (Int64) -> Void) -> TransferEngine {
        let policy: ConnectionPolicy = switch options.connections {
        case .automatic: .adaptive(maximum: options.maximumConnections)
        case .fixed(let count): .fixed(count)
        }
        var configuration = EngineConfiguration(
            remote: remote, mode: mode, segments: segments, connections: mode == .ranged ? policy : .fixed(1),
            minimumSplitBytes: options.minimumSplitBytes, recycleConnections: options.recycleConnections,
            request: options.request, retry: options.retry,
            writeBufferBytes: Self.writeBufferBytes(options),
            checkpointIntervalSeconds: options.checkpointIntervalSeconds,
            lease: lease(host: Source(remote: remote).origin),
            bufferPool: sharing?.buffers)
        configuration.startLimit = startLimit
        configuration.laterPieces = laterPieces
        configuration.maximumConnectionsPerSource = options.maximumConnectionsPerHost
        if mode == .ranged { configuration.mirrors = agreeingMirrors(remote) }
        let tracker = ProgressTracker(totalBytes: size, emit: emit)
        let emit = self.emit
        let resumed = resumedUnchecked
        return TransferEngine(configuration: configuration, loop: multi, file: file, cancellation: cancellation) { event in
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

    // MARK: Mirrors

    /// Mirrors whose bytes failed a spot check in this download: never used again in it.
    private var distrusted: Set<String> = []
    /// Mirror bytes an interrupted run recorded as not yet spot-checked (from the journal).
    private var resumedUnchecked: [String: [ByteRange]] = [:]

    /// Mirror bytes not spot-checked yet: the resumed ones and `engine`'s.
    private func uncheckedMirrorBytes(_ engine: [String: [ByteRange]]) -> [String: [ByteRange]] {
        resumedUnchecked.merging(engine) { $0 + $1 }
    }
    /// Whether the notice that mirror bytes are only spot-checked was given.
    private var saidSpotChecksOnly = false

    /// After a run that took bytes from mirrors with no digest to check them by: each mirror's
    /// ranges are spot-checked against the main URL (``MirrorSpotCheck``). A mirror that fails
    /// is dropped and named; returns the plan that fetches its ranges again, or `nil` when every
    /// mirror agreed.
    private func rangesToRefetch(_ engine: TransferEngine, remote: RemoteFile, size: Int64?, file: PartialFile,
                                 expected: [(DigestValue, String)]) throws(DownloadError) -> [SegmentState]? {
        let unchecked = uncheckedMirrorBytes(engine.mirrorExtents)
        guard expected.isEmpty, let size, !unchecked.isEmpty else { return nil }
        let fetcher = SmallGet(request: options.request, cancellation: cancellation, multi: multi)
        var refetch: [ByteRange] = []
        for (mirror, extents) in unchecked.sorted(by: { $0.key < $1.key }) {
            let references = Source(remote: remote).referenceURLs
            guard let bad = try MirrorSpotCheck.firstMismatch(extents: extents, file: file, referenceURLs: references,
                                                              fetcher: fetcher) else { continue }
            distrusted.insert(mirror)
            let bytes = extents.reduce(Int64(0)) { $0 + $1.count }
            emit(.warning("mirror \(Redaction.url(mirror)) dropped: the bytes it sent at \(bad.httpRangeSpec) differ from the main URL's; its \(extents.count) range\(extents.count == 1 ? "" : "s") (\(ByteCount.format(bytes))) are fetched again"))
            refetch += extents
        }
        // Checked: the next round's journal holds only what its own mirrors deliver.
        resumedUnchecked = [:]
        return refetch.isEmpty ? nil : SegmentState.reopening(size: size, extents: refetch)
    }

    /// The mirrors (``DownloadOptions/mirrors``) that serve the same file as `primary`: each is
    /// probed, must have the same size and serve ranges, and must send the same bytes as the
    /// main URL at a few sampled offsets (random ones and the last block) before any byte of it
    /// is trusted. Each one left out is named in a warning, with why.
    private func agreeingMirrors(_ primary: RemoteFile) -> [RemoteFile] {
        guard !options.mirrors.isEmpty, let size = primary.size, primary.isSegmentable else {
            if !options.mirrors.isEmpty { emit(.warning("\(Redaction.url(url)) serves no byte ranges: its mirrors are not used")) }
            return []
        }
        let fetcher = SmallGet(request: options.request, cancellation: cancellation, multi: multi)
        let samples = Self.sampleRanges(size: size)
        var reference: [[UInt8]] = []
        for range in samples {
            guard let answer = try? fetcher.fetch(Source(remote: primary).requestURL, range: range),
                  Self.isExactSample(answer, of: range, from: primary) else {
                emit(.warning("\(Redaction.url(url)): could not read the bytes mirrors are compared with; the mirrors are not used"))
                return []
            }
            reference.append(answer.body)
        }
        let prober = Prober(request: options.request, cancellation: cancellation, multi: multi)
        var agreed: [RemoteFile] = []
        for mirror in options.mirrors where !distrusted.contains(mirror) {
            let name = Redaction.url(mirror)
            do {
                let remote = try prober.probe(mirror)
                guard remote.size == size else {
                    emit(.warning("mirror \(name) left out: it has \(remote.size.map { "\($0) bytes" } ?? "no known size"), the main URL \(size)"))
                    continue
                }
                guard remote.isSegmentable else {
                    emit(.warning("mirror \(name) left out: it serves no byte ranges"))
                    continue
                }
                var differs: ByteRange?
                for (range, bytes) in zip(samples, reference) {
                    let answer = try fetcher.fetch(Source(remote: remote).requestURL, range: range)
                    if !Self.isExactSample(answer, of: range, from: remote) || answer.body != bytes {
                        differs = range
                        break
                    }
                }
                if let differs {
                    emit(.warning("mirror \(name) left out: it serves other bytes than the main URL at bytes \(differs.httpRangeSpec)"))
                    continue
                }
                agreed.append(remote)
            } catch {
                emit(.warning("mirror \(name) left out: \(error.message)"))
            }
        }
        if !agreed.isEmpty, expectedDigests(primary).isEmpty, !saidSpotChecksOnly {
            saidSpotChecksOnly = true
            emit(.warning("no checksum to prove the mirrors' bytes: each range they send is spot-checked against the main URL, which catches a mirror sending other ranges but not one changing a few bytes"))
        }
        return agreed
    }

    /// Whether a sample answer is a 206 with exactly `range` of the probed file (its size and
    /// validators), as a download request's answer must be.
    static func isExactSample(_ answer: SmallGet.Answer, of range: ByteRange, from remote: RemoteFile) -> Bool {
        ResponseValidator(remote: remote, asked: range, toUserURL: true).verdict(answer.head) == .accept
    }

    /// Where a mirror's bytes are compared with the main URL's: three random 4 KiB blocks and
    /// the last one (the whole file when it is smaller).
    static func sampleRanges(size: Int64) -> [ByteRange] {
        let block: Int64 = 4096
        guard size > 4 * block else { return [ByteRange(0, size)] }
        var ranges = (0..<3).map { _ -> ByteRange in
            let start = Int64.random(in: 0..<(size - block)) / block * block
            return ByteRange(start, start + block)
        }
        ranges.append(ByteRange(size - block, size))
        return ranges
    }

    // MARK: Streaming

    /// Where a stream's spool goes: `$TMPDIR`, else `/var/tmp` (on disk on Debian, unlike a
    /// `/tmp` that may be memory).
    static var spoolDirectory: String {
        if let value = getenv("TMPDIR"), value.pointee != 0 { return String(cString: value) }
        return "/var/tmp"
    }

    /// A stream's ranges: pieces of at most half a window per connection, so every connection
    /// has work inside the window and the first pieces go out early.
    static func streamPieceBytes(window: Int64, connections: Int) -> Int64 {
        let piece = window / Int64(2 * max(connections, 1))
        return max(1 << 20, min(16 << 20, piece / 4096 * 4096))
    }

    /// Downloads into `target` in order: ranges in parallel within the reorder window, through a
    /// spool with no name. No journal: a stream cannot be resumed.
    private func stream(_ remote: RemoteFile, to target: StreamTarget) throws(DownloadError) -> DownloadSummary {
        let expected = expectedDigests(remote)
        let spool = try wrap { () throws(SystemCallError) in try PartialFile(anonymousIn: Self.spoolDirectory) }
        let output: Int32
        do {
            output = try wrap { () throws(SystemCallError) in try target.open() }
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
        let multi = self.multi
        let cancellation = self.cancellation
        var algorithms = expected.map(\.0.algorithm)
        for algorithm in options.streamDigests where !algorithms.contains(algorithm) { algorithms.append(algorithm) }
        let stream = OrderedStream(spool: spool, output: output, outputName: target.name, window: options.streamWindowBytes,
                                   algorithms: algorithms) { failed in
            if failed { cancellation.cancel() }
            multi.wakeup()
        }
        defer { drained = stream.stop(waitingAtMost: Self.streamStopSeconds) }
        let ranged = remote.isSegmentable && remote.size != nil
        let size = remote.size
        // Pieces are planned as the window reaches them: a claimed size costs nothing up front.
        var segments: [SegmentState] = []
        var plan: StreamPlan?
        if ranged, let size {
            plan = StreamPlan(size: size, pieceBytes: Self.streamPieceBytes(window: options.streamWindowBytes,
                                                                           connections: options.connectionLimit))
        } else {
            segments = [SegmentState(range: ByteRange(0, size ?? Int64.max))]
        }
        let mode: EngineConfiguration.Mode = ranged ? .ranged : .singleStream
        let pieceCount = plan.map { Int(clamping: $0.pieceCount) } ?? 1
        emit(.started(DownloadStart(path: target.name, totalBytes: size, resumedBytes: 0, segments: pieceCount,
                                    connections: ranged ? options.connectionLimit : 1, segmented: ranged,
                                    adaptive: ranged && options.connections == .automatic)))
        let window: @Sendable () -> Int64 = { stream.startLimit }
        let engine = makeEngine(remote: remote, size: size, segments: segments, mode: mode, file: spool, checkpointer: nil,
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
                throw DownloadError(error.code, "\(error.message); \(target.name) has already received these bytes", remedy: error.remedy)
            }
            for (want, source) in expected { emit(.verified(want, source: source)) }
        }
        return DownloadSummary(path: target.name, bytes: finalSize, transferredBytes: finalSize, resumedBytes: 0,
                               elapsedSeconds: MonotonicTime.now() - startedAt, verified: verified,
                               alreadyComplete: false, segmented: ranged, verificationSeconds: nil, streamed: true,
                               digests: digests)
    }

    /// How long a stream that ends (done, failed or interrupted) waits for its copying to stop.
    static let streamStopSeconds = 2.0

    /// The output of a stream failed: a reader that went away, or a device error.
    private static func streamFailure(_ failure: SystemCallError, target: StreamTarget, sent: Int64) -> DownloadError {
        guard failure.errno == EPIPE else { return failure.downloadError }
        return DownloadError(.fileSystem(errno: EPIPE), "the reader of \(target.name) closed it after \(sent) bytes; the download stopped")
    }

    /// The per-connection coalescing buffer: the configured size, shrunk for many connections so
    /// that all buffers together stay near 8 MiB (never under 128 KiB each).
    static func writeBufferBytes(_ options: DownloadOptions) -> Int {
        min(options.writeBufferBytes, max(128 << 10, (8 << 20) / options.connectionLimit))
    }

    /// Writes the first journal record (durably) and returns the checkpointer that keeps it
    /// current, or `nil` when this download keeps no journal.
    private func startJournal(store: JournalStore?, remote: RemoteFile, size: Int64?, segments: [SegmentState],
                              file: PartialFile) throws(DownloadError) -> Checkpointer? {
        guard let store, options.journal, let size, size >= Self.smallFileBytes else {
            store?.remove()
            return nil
        }
        let writer = Checkpointer(file: file, store: store, identity: JournalRecord(remote: named(remote), size: size, segments: segments))
        try wrap { () throws(SystemCallError) in try writer.finish(segments) }
        return writer
    }

    /// Expected digests with where each came from: the user's, then the server's (if enabled).
    private func expectedDigests(_ remote: RemoteFile) -> [(DigestValue, String)] {
        var expected = options.checksums.map { ($0, "the checksum given") }
        if options.verifyAdvertisedDigests {
            for advertised in remote.advertisedDigests where !expected.contains(where: { $0.0.algorithm == advertised.algorithm }) {
                if let value = DigestValue(algorithm: advertised.algorithm, hex: advertised.hex) {
                    expected.append((value, "server's \(advertised.header) header"))
                }
            }
        }
        return expected
    }

    private func checkFreeSpace(paths: OutputPaths, file: PartialFile, size: Int64) throws(DownloadError) {
        let allocated = (try? file.size()) ?? 0
        guard let available = FileSystem.availableBytes(at: FileSystem.directoryName(of: paths.partial)),
              size - allocated > available else { return }
        throw DownloadError(.fileSystem(errno: ENOSPC), "not enough free space for \(paths.final): need \(ByteCount.format(size - allocated)), \(ByteCount.format(available)) available")
    }

    private func wrap<Value>(_ body: () throws(SystemCallError) -> Value) throws(DownloadError) -> Value {
        do {
            return try body()
        } catch {
            throw error.downloadError
        }
    }
}

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
