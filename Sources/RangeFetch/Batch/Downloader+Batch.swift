extension Downloader {
    /// Downloads many files, `batch.jobs` at once, sharing `batch.maximumConnections` connections
    /// (earlier files first), each resumable and verified like a single download. One file's
    /// failure does not stop the others unless `batch.failFast`; a rerun skips complete files and
    /// resumes partial ones.
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
    /// configuration ``S3Configuration/load(unsigned:)`` reads once for the batch.
    /// - Throws: only when the options are invalid, or when entries name S3 objects and no S3
    ///   configuration can be read; per-file failures are in the summary.
    public func download(
        batch entries: [BatchEntry], options batch: BatchOptions,
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> BatchSummary {
        try options.validate()
        try batch.validate()
        var base = options
        // The S3 configuration (credentials, region, endpoint) is read once for the whole batch,
        // not once per s3:// file.
        if base.s3 == nil, entries.contains(where: { (try? SourceAddress($0.url))?.isS3 == true }) { base.s3 = try S3Configuration.load() }
        let run = BatchRun(entries: entries, base: base, options: batch, cancellation: CancellationFlag(), emit: events)
        events(.started(BatchStart(files: entries.count, jobs: run.workerCount, maximumConnections: batch.maximumConnections,
                                   maximumConnectionsPerHost: batch.maximumConnectionsPerHost)))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<run.workerCount {
                group.addTask {
                    try? await BlockingWork.run(cancellation: run.cancellation) { () throws(DownloadError) in run.work() }
                }
            }
        }
        let summary = run.summary
        // Every connection taken from the shared budget was given back (debug builds: the tests).
        assert(run.budgetInUse == 0, "\(run.budgetInUse) connections of the batch's budget were never given back")
        assert(run.buffersInUse == 0, "\(run.buffersInUse) write buffers of the batch were never given back")
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
