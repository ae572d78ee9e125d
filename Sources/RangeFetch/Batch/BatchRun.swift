import Synchronization

/// Runs a batch: `jobs` worker threads take files in order from a shared ``BatchFeed``, each with one
/// libcurl multi handle kept from file to file (so its open connections serve the next file), and
/// every file's connections come from one ``ConnectionBudget`` where earlier files go first.
final class BatchRun: Sendable {
    let feed: BatchFeed
    private let base: DownloadOptions
    private let options: BatchOptions
    let cancellation: CancellationFlag
    private let emit: @Sendable (BatchEvent) -> Void
    private let budget: ConnectionBudget
    private let claims = PathClaims()
    /// Every file handed out so far, by index.
    private let results = Mutex<[Int: BatchFileResult]>([:])
    /// The S3 configuration for `s3://` entries when the options give none: read once, when the
    /// first such entry comes.
    private let s3 = Mutex<Result<S3Configuration, DownloadError>?>(nil)
    private let startedAt = MonotonicTime.now()

    init(feed: BatchFeed, base: DownloadOptions, options: BatchOptions, cancellation: CancellationFlag,
         emit: @escaping @Sendable (BatchEvent) -> Void) {
        self.feed = feed
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

    /// A worker per job; no more than the entries when they are all known.
    var workerCount: Int { feed.streams ? options.jobs : max(1, min(options.jobs, feed.givenCount)) }

    var summary: BatchSummary {
        let files = results.withLock { $0.values.sorted { $0.index < $1.index } }
        return BatchSummary(files: files, elapsedSeconds: MonotonicTime.now() - startedAt)
    }

    /// TLS sessions and DNS answers, shared by every worker's connections.
    private let share = CurlShare()

    /// One worker: files in order until none is left or the batch is stopped.
    func work() {
        // A loop that cannot be made fails each file this worker takes, naming why.
        let loop = Result { () throws(DownloadError) -> CurlLoop in try CurlLoop(share: share) }
        let connections = WorkerConnections(budget: budget)
        defer { connections.releaseAll() }
        while !cancellation.isCancelled {
            guard let (index, entry) = feed.next() else { return }
            results.withLock { $0[index] = BatchFileResult(index: index, url: entry.url, status: .notStarted) }
            emit(.queued(index: index, url: entry.url))
            run(index, entry: entry, loop: loop, connections: connections)
        }
    }

    private func run(_ index: Int, entry: BatchEntry, loop: Result<CurlLoop, DownloadError>, connections: WorkerConnections) {
        let began = MonotonicTime.now()
        let emit = self.emit
        // Where a file that does not finish stands: its path and the bytes it holds.
        let progress = Mutex<(path: String?, received: Int64, resumed: Int64)>((nil, 0, 0))
        let outcome = Result { () throws(DownloadError) -> DownloadSummary in
            let (url, options) = try SourceResolver.prepare(url: entry.url, options: self.options(for: entry))
            try Self.prepareDirectory(options.destination)
            let sharing = DownloadSession.BatchSharing(connections: connections, priority: index, claims: claims,
                                                       buffers: buffers)
            return try DownloadSession(url: url, options: options, cancellation: cancellation, loop: loop.get(),
                                       sharing: sharing, journalURL: (try? SourceAddress(entry.url))?.journalURL) { event in
                switch event {
                case .started(let start): progress.withLock { $0 = (start.path, start.resumedBytes, start.resumedBytes) }
                case .progress(let report): progress.withLock { $0.received = report.receivedBytes }
                default: break
                }
                emit(.file(index: index, event))
            }.run()
        }
        var result = BatchFileResult(index: index, url: entry.url, status: .downloaded)
        result.elapsedSeconds = MonotonicTime.now() - began
        (result.path, result.bytes, result.transferredBytes) = progress.withLock { ($0.path, $0.received, $0.received - $0.resumed) }
        switch outcome {
        case .success(let summary):
            result.status = summary.alreadyComplete ? .alreadyComplete : .downloaded
            result.path = summary.path
            result.bytes = summary.bytes
            result.transferredBytes = summary.transferredBytes
            emit(.file(index: index, .finished(summary)))
        case .failure(let error):
            result.status = error.category == .interrupted ? .interrupted : .failed
            result.error = error
            if result.status == .failed {
                emit(.failed(index: index, Self.naming(entry, in: error)))
                if options.failFast { cancellation.cancel() }
            }
        }
        results.withLock { $0[index] = result }
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
        if options.s3 == nil, (try? SourceAddress(entry.url))?.isS3 == true { options.s3 = try s3Configuration() }
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

    /// The S3 configuration read for the batch (once, at the first `s3://` entry).
    private func s3Configuration() throws(DownloadError) -> S3Configuration {
        try s3.withLock { cached in
            if let cached { return cached }
            let loaded = Result { () throws(DownloadError) -> S3Configuration in try S3Configuration.load() }
            cached = loaded
            return loaded
        }.get()
    }

    /// `options` with connection counts no larger than the batch's budget allows one file.
    private static func withinBudget(_ options: DownloadOptions, _ batch: BatchOptions) -> DownloadOptions {
        var options = options
        // Each source of a file is capped per host; mirrors on other hosts add connections.
        let sources = 1 + options.mirrors.count
        let cap = min(batch.maximumConnections, batch.maximumConnectionsPerHost * sources)
        options.maximumConnections = min(options.maximumConnections, cap)
        options.maximumConnectionsPerHost = min(options.maximumConnectionsPerHost, batch.maximumConnectionsPerHost)
        if case .fixed(let count) = options.connections { options.connections = .fixed(min(count, cap)) }
        return options
    }

    /// Creates the directory a file goes into (entries may name new ones), then checks it.
    private static func prepareDirectory(_ destination: DownloadOptions.Destination) throws(DownloadError) {
        let directory = switch destination {
        case .file(let path): FileSystem.directoryName(of: path)
        case .directory(let directory): directory
        case .standardOutput: "."
        }
        FileSystem.createDirectories(directory)
        try OutputPaths.checkDestination(destination, followsLink: false)
    }
}
