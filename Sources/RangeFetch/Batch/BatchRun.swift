import RangeFetchBase
import RangeFetchNetwork
import Synchronization

/// Runs a batch: its lane (``SmallFileLane``) takes the entries in order from the shared
/// ``BatchFeed``, probes them and downloads the files that come whole with their probe; `jobs`
/// worker threads download the entries it hands on (``BatchHandoff``), each with one libcurl multi
/// handle kept from file to file (so its open connections serve the next file). Every file's
/// connections come from one ``ConnectionBudget`` where earlier files go first.
final class BatchRun: Sendable {
    let feed: BatchFeed
    private let base: DownloadOptions
    let options: BatchOptions
    let cancellation: CancellationFlag
    let emit: @Sendable (BatchEvent) -> Void
    let budget: ConnectionBudget
    let claims = PathClaims()
    /// Files that ended, counted, and those under way, by index.
    private let results = Mutex<(ended: BatchTally, running: [Int: BatchFileResult])>((BatchTally(), [:]))
    /// The S3 configuration for `s3://` entries: the options', else read once for the batch, when
    /// the first such entry (or prefix) needs it.
    private let s3: S3ConfigurationOnce
    private let startedAt = MonotonicTime.now()
    /// Finished entries, skipped on a rerun and recorded as they finish; `nil`: none used.
    private let journal: BatchJournal?

    init(feed: BatchFeed, base: DownloadOptions, options: BatchOptions, journal: BatchJournal? = nil,
         s3: S3ConfigurationOnce? = nil, cancellation: CancellationFlag, emit: @escaping @Sendable (BatchEvent) -> Void) {
        self.feed = feed
        self.s3 = s3 ?? S3ConfigurationOnce(given: base.s3)
        self.journal = journal
        self.base = base
        self.options = options
        self.cancellation = cancellation
        self.emit = emit
        budget = ConnectionBudget(total: options.maximumConnections, perHost: options.maximumConnectionsPerHost)
        buffers = BufferPool(flushBytes: DownloadSession.writeBufferBytes(Self.withinBudget(base, options)))
    }

    /// Connections of the shared budget taken now (0 once every worker is done).
    var budgetInUse: Int { budget.inUse }

    /// Write buffers shared by every file whose buffers have the batch's size.
    private let buffers: BufferPool

    /// Write buffers not given back (0 once every worker is done).
    var buffersInUse: Int { buffers.buffersOut }

    /// A worker per job, for the files the lane hands on; no more than the entries when they are all known.
    var workerCount: Int { feed.streams ? options.jobs : max(1, min(options.jobs, feed.givenCount)) }

    var summary: BatchSummary {
        let elapsed = MonotonicTime.now() - startedAt
        return results.withLock { $0.ended.summary(running: Array($0.running.values), elapsedSeconds: elapsed) }
    }

    /// TLS sessions and DNS answers, shared by every worker's connections.
    let share = CurlShare()

    /// Small files that came whole are synced and renamed together (group commit).
    private let syncGroup = SyncGroup()

    /// Entries the lane handed on, for the workers (``SmallFileLane``).
    let handoff = BatchHandoff()

    /// Files being downloaded now, by the lane or a worker: the lane starts no more than `jobs`
    /// (``reserveFile()``).
    let filesActive = Atomic<Int>(0)

    /// Counts one more file under way when fewer than `jobs` are; `false` when `jobs` are.
    func reserveFile() -> Bool {
        var current = filesActive.load(ordering: .relaxed)
        while current < options.jobs {
            let (exchanged, original) = filesActive.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// An entry taken from the feed to be downloaded (not settled by the journal).
    struct Taken: Sendable {
        let index: Int
        let entry: BatchEntry
        /// Its key in the batch journal and the path it is for (``journalKey(_:)``).
        let key: (key: BatchKey, path: String)?
        /// What the lane's probe answered, when it asked (``SmallFileLane``).
        var answer: Prober.Answer?
        /// When it was taken, and then when it started (``starting(_:)``).
        var began: Double
    }

    /// The next entry to download, in order; those the journal settles on the way are added to
    /// `settled` (and to the results in bunches). `nil` once none is left or the batch is stopped.
    /// It is listed as under way once it starts (``starting(_:)``): one taken ahead and never
    /// started (the batch stopped) is left out of the results, as the entries not read.
    func take(settling settled: inout [BatchFileResult]) -> Taken? {
        while !cancellation.isCancelled {
            guard let (index, entry) = feed.next() else { return nil }
            let key = journalKey(entry)
            if let key, maySkip, let result = skipRecorded(index, entry: entry, key: key) {
                settled.append(result)
                if settled.count >= Self.settledBunch { add(settled: &settled) }
                continue
            }
            return Taken(index: index, entry: entry, key: key, answer: nil, began: MonotonicTime.now())
        }
        return nil
    }

    /// `taken` starts now, or ends before it could: it is listed as under way, said queued, and
    /// its time counted from here.
    func starting(_ taken: Taken) -> Taken {
        var taken = taken
        taken.began = MonotonicTime.now()
        results.withLock { $0.running[taken.index] = BatchFileResult(index: taken.index, url: taken.entry.url, status: .notStarted) }
        emit(.queued(index: taken.index, url: taken.entry.url))
        return taken
    }

    /// Adds files the journal settled to the results, all under one lock: a rerun of a million is
    /// made of these, and every lock taken per entry is contended by every worker (with 8 workers
    /// on 2 cores a lock per skipped file doubled the time).
    func add(settled: inout [BatchFileResult]) {
        guard !settled.isEmpty else { return }
        results.withLock { results in for result in settled { results.ended.add(result) } }
        settled.removeAll(keepingCapacity: true)
    }

    /// One worker: the entries the lane hands on, until it is done and none is left.
    func work() {
        // A loop that cannot be made fails each file this worker takes, naming why.
        var loop: Result<CurlLoop, DownloadError>?
        let connections = WorkerConnections(budget: budget)
        defer { connections.releaseAll() }
        // The directory the last file went into: made, checked and opened once for the files after it.
        var prepared: DirectoryHandle?
        // A worker waiting for its next file holds no connection: the budget's places its idle
        // connections held could serve no other file meanwhile, and a retried probe, or the lane,
        // waited for them until the batch ended (which never came). They are closed (the loop
        // goes, with its cache) and given back.
        while let taken = handoff.next(beforeWaiting: {
            loop = nil
            connections.releaseAll()
        }) {
            let current = loop ?? Result { () throws(DownloadError) -> CurlLoop in try CurlLoop(share: share) }
            loop = current
            run(taken, loop: current, connections: connections, prepared: &prepared)
            filesActive.subtract(1, ordering: .relaxed)
            handoff.workerEnded()
        }
    }

    /// The entry's options, resolved source and directory, as its download uses them.
    /// - Parameter prepared: the directory the caller's last file went into, made, checked and
    ///   opened then (``prepareDirectory(_:)``, walked one component at a time, never through a
    ///   link): not again for a file in the same one, whose `NAME.part` is created in it.
    func resolve(_ entry: BatchEntry,
                 prepared: inout DirectoryHandle?) throws(DownloadError) -> (options: DownloadOptions, source: ResolvedSource) {
        let entryOptions = try self.options(for: entry)
        let source = try ResolvedSource(object: entry.url, request: entryOptions.request, s3: s3)
        let options = entryOptions.bound(to: source)
        let directory = Self.directory(of: options.destination)
        if directory != prepared?.path {
            prepared = nil
            prepared = try Self.prepareDirectory(options.destination)
        }
        return (options, source)
    }

    private func run(_ taken: Taken, loop: Result<CurlLoop, DownloadError>, connections: WorkerConnections,
                     prepared: inout DirectoryHandle?) {
        let index = taken.index
        let emit = self.emit
        // Where a file that does not finish stands: its path and the bytes it holds.
        let progress = Mutex<(path: String?, received: Int64, resumed: Int64)>((nil, 0, 0))
        // The validators the download knew the file by, for the journal.
        let validators = Mutex<(etag: String?, lastModified: String?)>((nil, nil))
        let outcome = Result { () throws(DownloadError) -> DownloadSummary in
            let (options, source) = try resolve(taken.entry, prepared: &prepared)
            let sharing = DownloadSession.BatchSharing(connections: connections, priority: index, claims: claims,
                                                       buffers: buffers, probeKeepsBytes: true, syncGroup: syncGroup,
                                                       directory: prepared)
            return try DownloadSession(source: source, options: options, cancellation: cancellation, loop: loop.get(),
                                       sharing: sharing, probed: taken.answer) { event in
                switch event {
                case .started(let start): progress.withLock { $0 = (start.path, start.resumedBytes, start.resumedBytes) }
                case .progress(let report): progress.withLock { $0.received = report.receivedBytes }
                case .probed(let remote): validators.withLock { $0 = (remote.etag, remote.lastModified) }
                default: break
                }
                emit(.file(index: index, event))
            }.run()
        }
        let (path, received, resumed) = progress.withLock { ($0.path, $0.received, $0.resumed) }
        finish(taken, outcome: outcome, path: path, bytes: received, transferred: received - resumed,
               validators: validators.withLock { $0 })
    }

    /// Reports an entry's end (its result, the journal's record, the events), however it ran.
    /// - Parameters:
    ///   - path, bytes, transferred: where a file that did not finish stands.
    ///   - validators: what the download knew the file by, for the journal.
    func finish(_ taken: Taken, outcome: Result<DownloadSummary, DownloadError>, path: String? = nil, bytes: Int64 = 0,
                transferred: Int64 = 0, validators: (etag: String?, lastModified: String?) = (nil, nil)) {
        let index = taken.index
        var result = BatchFileResult(index: index, url: taken.entry.url, status: .downloaded)
        result.elapsedSeconds = MonotonicTime.now() - taken.began
        (result.path, result.bytes, result.transferredBytes) = (path, bytes, transferred)
        switch outcome {
        case .success(let summary):
            result.status = summary.alreadyComplete ? .alreadyComplete : .downloaded
            result.path = summary.path
            result.bytes = summary.bytes
            result.transferredBytes = summary.transferredBytes
            if let key = taken.key, !summary.streamed, summary.path == key.path {
                record(taken.entry, key: key.key, summary: summary, validators: validators)
            }
            emit(.file(index: index, .finished(summary)))
        case .failure(let error):
            result.status = error.category == .interrupted ? .interrupted : .failed
            result.error = error
            if result.status == .failed {
                emit(.failed(index: index, Self.naming(taken.entry, in: error)))
                if options.failFast { cancellation.cancel() }
            }
        }
        results.withLock { results in
            results.running[index] = nil
            results.ended.add(result)
        }
    }

    /// Whether a file the journal records may be skipped: not when the servers are to be asked
    /// again (``BatchOptions/recheck``), nor when files are to be fetched anew
    /// (``DownloadOptions/resume`` `.restart`, ``DownloadOptions/existingFile`` `.overwrite`).
    private var maySkip: Bool {
        !options.recheck && base.resume == .resume && base.existingFile != .overwrite
    }

    /// The entry's key in the batch journal and the path it is for: `nil` without a journal, and
    /// when the path is known only from the server's answer (``NameSource/server`` without `out=`).
    private func journalKey(_ entry: BatchEntry) -> (key: BatchKey, path: String)? {
        guard journal != nil else { return nil }
        let path: String
        switch entry.destination(defaultDirectory: options.directory) {
        case .file(let file): path = file
        case .directory: guard base.nameSource == .givenURL else { return nil }
            path = entry.expectedPath(defaultDirectory: options.directory)
        case .standardOutput: return nil
        }
        return (BatchKey(url: entry.url, path: path, checksums: base.checksums + entry.checksums), path)
    }

    /// Files settled by the journal that are added to the results at once.
    private static let settledBunch = 1024

    /// Reports the entry complete, without a request, when the journal's record of `key` matches
    /// the file at its path as it is now, and returns its result; `nil` (and nothing done) otherwise.
    private func skipRecorded(_ index: Int, entry: BatchEntry, key: (key: BatchKey, path: String)) -> BatchFileResult? {
        let began = MonotonicTime.now()
        guard let journal, journal.hasRecord(key.key), let stamp = FileStamp(fileAt: key.path),
              journal.isFinished(key.key, stamp: stamp) else { return nil }
        let elapsed = MonotonicTime.now() - began
        let summary = DownloadSummary(path: key.path, bytes: stamp.size, transferredBytes: 0, resumedBytes: stamp.size,
                                      elapsedSeconds: elapsed, verified: [], alreadyComplete: true, segmented: false,
                                      verificationSeconds: nil)
        var result = BatchFileResult(index: index, url: entry.url, status: .alreadyComplete)
        (result.path, result.bytes, result.elapsedSeconds) = (key.path, stamp.size, elapsed)
        emit(.queued(index: index, url: entry.url))
        emit(.file(index: index, .finished(summary)))
        return result
    }

    /// Appends the record of a finished entry (its file is in place, the rename durable); the
    /// first failure to write is said once, and nothing more is recorded.
    private func record(_ entry: BatchEntry, key: BatchKey, summary: DownloadSummary,
                        validators: (etag: String?, lastModified: String?)) {
        guard let journal, let stamp = FileStamp(fileAt: summary.path), stamp.size == summary.bytes else { return }
        let details = BatchRecord.Details(url: Redaction.url(entry.url), path: summary.path, etag: validators.etag,
                                          lastModified: validators.lastModified, digests: summary.verified.map(\.description))
        if let failure = journal.append(BatchRecord(key: key, stamp: stamp, details: details)) {
            emit(.warning(.batchJournalUnused(path: journal.path, reason: "\(failure)")))
        }
    }

    /// `error` with a message that names the entry: its line in the list and its URL. A failure
    /// about the entry's own URL (``DownloadError/url``) names it already, so only the line is
    /// added; one about another URL (a mirror, a redirect target) or none gets both.
    static func naming(_ entry: BatchEntry, in error: DownloadError) -> DownloadError {
        let namesEntry = error.url != nil && error.url == Redaction.url(entry.url)
        let subject = namesEntry ? entry.origin : Manifest.describe(entry)
        return error.with(message: subject.map { "\($0): \(error.message)" } ?? error.message)
    }

    /// The entry's download options: the batch's, with its own name, directory, digests and
    /// headers, and never more connections than one host may have.
    private func options(for entry: BatchEntry) throws(DownloadError) -> DownloadOptions {
        var options = base
        options.destination = entry.destination(defaultDirectory: self.options.directory)
        // A list's out= names, like a server's, are never followed through a link.
        options.followsLinkAtOutputPath = false
        options.checksums += entry.checksums
        options.request.headers += entry.headers
        options.mirrors = entry.mirrors
        options.expectedSize = entry.expectedSize
        options.pieceDigests = entry.pieceDigests
        options = Self.withinBudget(options, self.options)
        try options.validate()
        return options
    }

    /// `options` with connection counts no larger than the batch's budget allows one file.
    private static func withinBudget(_ options: DownloadOptions, _ batch: BatchOptions) -> DownloadOptions {
        options.within(total: batch.maximumConnections, perHost: batch.maximumConnectionsPerHost)
    }

    /// The directory a file saved at `destination` goes into, as the directory part of the
    /// file's path (``PartialFile`` compares the two).
    private static func directory(of destination: DownloadOptions.Destination) -> String {
        FileSystem.directoryName(of: OutputPaths.path(destination, suggestedName: "name"))
    }

    /// Creates the directory a file goes into (entries may name new ones), checks it, and opens it.
    private static func prepareDirectory(_ destination: DownloadOptions.Destination) throws(DownloadError) -> DirectoryHandle {
        try FileSystem.createDirectories(directory(of: destination))
        try OutputPaths.checkDestination(destination, followsLink: false)
        do {
            return try DirectoryHandle(directory(of: destination))
        } catch {
            throw error.downloadError
        }
    }
}
