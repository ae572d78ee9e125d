import RangeFetchBase
import RangeFetchNetwork

extension Downloader {
    /// Downloads many files, `batch.jobs` at once, sharing `batch.maximumConnections` connections
    /// (earlier files first), each resumable and verified like a single download. One file's
    /// failure does not stop the others unless `batch.failFast`; a rerun skips complete files and
    /// resumes partial ones.
    ///
    /// Each finished file is recorded in the batch journal (`.rangefetch-batch` in
    /// `batch.directory`, see ``BatchOptions/recheck``): a rerun reports a recorded file whose
    /// size, times and inode are unchanged on disk as already complete without any request to
    /// its server. When the journal cannot be used (another user's file, a link at its name),
    /// a `.warning` says so and every file is checked with its server.
    ///
    /// ```swift
    /// let entries = try Manifest.parse("\(base)/a.bin\n\(base)/b.bin\n", source: "list")
    /// var batch = BatchOptions()
    /// batch.directory = directory + "/batch"
    /// batch.jobs = 2
    /// let summary = try await downloader.download(batch: entries, options: batch)
    /// print("3. batch: \(summary.count(.downloaded)) downloaded, \(summary.count(.failed)) failed")
    /// ```
    ///
    /// (Step 3 of `Examples/Embedding`, which the tests build and run.)
    ///
    /// `self.options` applies to every file (connections per file, retries, request options);
    /// an entry's own name, directory, digests and headers are added to them. `events` is called
    /// from several threads at once (one per job) and must be thread-safe and quick.
    /// Cancelling the calling task stops every file, keeping their partial files for a rerun.
    /// An `s3://BUCKET/KEY` entry is signed with ``DownloadOptions/s3`` when given, else with the
    /// configuration ``S3Configuration/load(unsigned:)`` reads once for the batch, at the first
    /// such entry (when it cannot be read, every `s3://` entry fails with that error).
    /// - Throws: only when the options are invalid, or when two entries would be saved at the same
    ///   path (once the files before the second have ended); per-file failures are in the summary.
    public func download(
        batch entries: [BatchEntry], options batch: BatchOptions,
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> BatchSummary {
        try await download(batch: BatchInput(entries: entries), options: batch, events: events)
    }

    /// Downloads a batch whose list is streamed: ``BatchInput/entries`` first, then the list's
    /// entries as its lines are read, so the first file starts at once however long the list,
    /// and memory does not grow with it. Otherwise as ``download(batch:options:events:)-([BatchEntry],_,_)``
    /// (entries given up front: `BatchInput(entries:)`).
    ///
    /// ``BatchInput/prefixes`` are listed the same way, a page at a time between the given entries
    /// and the list: the first object starts once the first page is read, and the next page is
    /// asked for when the workers have taken every object of the one before. Their listings and
    /// objects are signed with ``DownloadOptions/s3`` when given, else with the configuration
    /// ``S3Configuration/load(unsigned:)`` reads before the batch starts.
    ///
    /// Every entry is checked as it is reached, including other shards': its line, and its expected
    /// path against every earlier entry's (`DistinctPaths`).
    /// - Throws: as the other form; and a usage error naming the file and line (for a malformed
    ///   line, a path an earlier entry has, an unreadable or empty list) once the files taken up
    ///   before it have ended: no file after it is started. A listing that fails midway (an HTTP
    ///   error, a continuation token sent twice, a page that is not a listing) ends the batch the
    ///   same way, with an error naming the prefix and what the store said.
    public func download(
        batch input: BatchInput, options batch: BatchOptions,
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> BatchSummary {
        try options.validate()
        try batch.validate()
        var options = self.options
        // Read once for every file (a bad one stops the batch before any request), not per file.
        try options.request.readNetrc()
        // One configuration for the prefixes' listings and every s3:// entry's requests, read
        // once (for prefixes, before the batch starts: their listers are made with the feed).
        let s3 = S3ConfigurationOnce(given: options.s3)
        if !input.prefixes.isEmpty { _ = try s3.configuration() }
        let cancellation = CancellationFlag()
        let feed = try BatchFeed(input, defaultDirectory: batch.directory, options: options, s3: s3, cancellation: cancellation)
        let opened = try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> BatchJournal.Opened in
            try BatchJournal.open(directory: batch.directory, loading: !batch.recheck, cancellation: cancellation)
        }
        let journal: BatchJournal? = if case .journal(let journal) = opened { journal } else { nil }
        let run = BatchRun(feed: feed, base: options, options: batch, journal: journal, s3: s3, cancellation: cancellation,
                           emit: events)
        events(.started(BatchStart(files: input.entries.count, jobs: run.workerCount, maximumConnections: batch.maximumConnections,
                                   maximumConnectionsPerHost: batch.maximumConnectionsPerHost,
                                   listStreamed: feed.streams)))
        if case .unused(let path, let reason) = opened { events(.warning(.batchJournalUnused(path: path, reason: reason))) }
        await withTaskGroup(of: Void.self) { group in
            // The lane takes the entries in order and downloads the files that come whole with
            // their probe; the workers, the entries it hands on.
            let lanes = SmallFileLane.Group(run: run)
            for _ in 0..<lanes.count {
                group.addTask {
                    try? await BlockingWork.run(cancellation: run.cancellation) { () throws(DownloadError) in
                        SmallFileLane.run(in: lanes)
                    }
                }
            }
            for _ in 0..<run.workerCount {
                group.addTask {
                    try? await BlockingWork.run(cancellation: run.cancellation) { () throws(DownloadError) in run.work() }
                }
            }
        }
        var summary = run.summary
        if cancellation.isCancelled && !feed.isExhausted { summary.stopped = DownloadError.cancelled() }
        // Every connection taken from the shared budget was given back (debug builds: the tests).
        assert(run.budgetInUse == 0, "\(run.budgetInUse) connections of the batch's budget were never given back")
        assert(run.buffersInUse == 0, "\(run.buffersInUse) write buffers of the batch were never given back")
        if let failure = feed.failure { throw failure }
        events(.finished(summary))
        return summary
    }

    /// The same batch as one stream of events ending with `.finished`; ending iteration early
    /// cancels it, and cancelling the task that iterates it ends it by throwing (category
    /// `.interrupted`) once every file is closed.
    public func events(forBatch entries: [BatchEntry], options batch: BatchOptions) -> DownloadEventStream<BatchEvent> {
        DownloadEventStream { send in
            _ = try await download(batch: entries, options: batch, events: send)
            if Task.isCancelled { throw DownloadError.cancelled() }
        }
    }
}
