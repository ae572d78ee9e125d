import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch

/// The options only a batch takes.
struct BatchOptionGroup: ParsableArguments {
    @Option(name: [.short, .customLong("input-file")], help: ArgumentHelp("Download every URL listed in this file ('-' for stdin): one URL per line (http(s), or s3://BUCKET/KEY for an S3 object), with aria2c's indented 'out=', 'dir=' (inside -d, no '..'), 'checksum=', 'header=' lines, or JSON lines {\"url\": ..., \"out\": ..., \"sha256\": ...}. Example: -i models.txt", valueName: "file"))
    var inputFile: String?

    @Option(name: [.short, .customLong("jobs")], help: ArgumentHelp("Files downloaded at once in a batch. Example: -j 16", valueName: "n"))
    var jobs: Int = 4

    @Option(name: .customLong("shard"), help: ArgumentHelp("Download only the batch entries whose URL hashes to shard K of N (0 <= K < N), so N machines can split one list with no coordinator; with hf://, the repository's files whose blob hashes to shard K, so N jobs fill one shared cache. Example: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT", valueName: "K/N"), transform: ShardArgument.parse)
    var shard: ShardArgument?

    @Flag(name: .customLong("fail-fast"), help: "In a batch, stop every file at the first failure (by default the others finish).")
    var failFast = false

    @Flag(name: .customLong("recheck"), help: "In a batch, ask every server again about files already downloaded. A batch records each finished file in DIR/.rangefetch-batch (-d DIR); a rerun skips a recorded file that is unchanged on disk without any request, so rerunning a finished list of a million files takes seconds. That trusts the disk, not the server: use --recheck when the server's files may have changed since (complete files whose server copy is unchanged are still kept, changed ones fetched again). Example: rangefetch -i models.txt -d models --recheck")
    var recheck = false
}

/// `rangefetch URL URL …`, `-i FILE`: many files, `-j` at once, sharing one connection budget.
extension Get {
    /// Several URLs, a list file or a shard make a batch.
    var isBatch: Bool { batch.inputFile != nil || urls.count > 1 || batch.shard != nil || urls.contains { SourceAddress.s3Location($0)?.isPrefix == true } }

    func validateBatch() throws {
        if urls.isEmpty && batch.inputFile == nil { throw ValidationError("--shard needs a list: -i FILE or several URLs") }
        if output != nil { throw ValidationError("-o names one file; for a batch use -d DIR, and out= lines in the -i list for names") }
        if !checks.checksums.isEmpty { throw ValidationError("--checksum applies to one file; in a batch put checksum= lines (or \"sha256\" keys) in the -i list, or use --checksum-file") }
        if printDigest != nil { throw ValidationError("--print-digest applies to one file; for a batch run rangefetch verify afterwards") }
        guard BatchOptions.jobRange.contains(batch.jobs) else { throw ValidationError("-j/--jobs must be between 1 and 256 (got \(batch.jobs))") }
        guard (1...1024).contains(maxConnections) else {
            throw ValidationError("--max-connections must be between 1 and 1024 for a batch (got \(maxConnections))")
        }
        guard (1...1024).contains(batchPerHost(default: 1)) else {
            throw ValidationError("--max-connections-per-host must be between 1 and 1024 (got \(batchPerHost(default: 1)))")
        }
    }

    func runBatch() async throws {
        let reporter = BatchReporter(json: json, quiet: quiet, verbose: verbose)
        if network.insecure { writeOut("warning: \(Reporter.words(.certificatesUnchecked))\n", to: STDERR_FILENO) }
        let summary: BatchSummary
        do {
            summary = try await downloadBatch(reporter: reporter)
        } catch {
            let status = ExitStatus.code(for: error)
            reporter.fail(error, status: status)
            throw CommandFailure(status: status)
        }
        reporter.finish(summary)
        if !summary.succeeded, let error = summary.firstError {
            throw CommandFailure(status: ExitStatus.code(for: error))
        }
    }

    private func downloadBatch(reporter: BatchReporter) async throws(DownloadError) -> BatchSummary {
        var options = try makeOptions()
        let (input, namesS3) = try loadInput()
        // One S3 configuration for the run: the prefixes' listings and every object's requests,
        // read before the batch starts when a command-line URL needs it (an -i list's s3:// lines
        // alone are covered by download(batch:), which reads it at the first).
        if options.s3 == nil, namesS3 { options.s3 = try S3Configuration.load() }
        let downloader = Downloader(options: options)
        reporter.begin(urls: input.listPath == nil && input.prefixes.isEmpty && input.shard == nil ? input.entries.map(\.url) : [])
        let given = batchOptions()
        return try await Interrupts.cancelling { () async throws(DownloadError) -> BatchSummary in
            try await downloader.download(batch: input, options: given) { reporter.handle($0) }
        }
    }

    /// The most connections to one host in a batch: -x, else --max-connections-per-host, else
    /// the library's default.
    /// `defaultPerHost` when neither is given.
    private func batchPerHost(default defaultPerHost: Int) -> Int {
        aria2MaxPerHost?.perHost ?? maxConnectionsPerHost ?? defaultPerHost
    }

    /// The batch's options from the flags; `connections`: the connections it shares, in all and
    /// to one host, when the flags do not say (the library's defaults, or a Hub repository's).
    func batchOptions(connections: (total: Int, perHost: Int)? = nil) -> BatchOptions {
        var options = BatchOptions()
        options.jobs = batch.jobs
        options.maximumConnections = maxConnectionsGiven ?? connections?.total ?? options.maximumConnections
        options.maximumConnectionsPerHost = batchPerHost(default: connections?.perHost ?? options.maximumConnectionsPerHost)
        options.failFast = batch.failFast
        options.recheck = batch.recheck
        options.directory = directory ?? "."
        return options
    }

    /// The batch's entries: URLs on the command line, then the objects of its prefixes, then the
    /// `-i` list; the library lists the prefixes a page at a time and streams the list, checking
    /// each entry as it reaches it and keeping this shard's. `namesS3`: a command-line URL is an
    /// `s3://` one. Each command-line URL is parsed here, once.
    private func loadInput() throws(DownloadError) -> (input: BatchInput, namesS3: Bool) {
        var namesS3 = false
        var entries: [BatchEntry] = []
        var prefixes: [String] = []
        for url in urls {
            if SourceAddress.isMetalinkFile(url) {
                entries.append(try BatchEntry(url: url).resolvingMetalink())
                continue
            }
            let address: SourceAddress
            do { address = try SourceAddress(url) } catch { throw DownloadError(usageMessage: error.message) }
            namesS3 = namesS3 || address.isS3
            if address.isPrefix { prefixes.append(url) } else { entries.append(BatchEntry(url: url)) }
        }
        var input = BatchInput(entries: entries, prefixes: prefixes, listPath: batch.inputFile, shard: batch.shard?.selector)
        if let checksumFile = checks.checksumFile {
            // Each entry takes the line naming its file; entries it does not name get none.
            guard let sums = try? String(contentsOfFile: checksumFile, encoding: .utf8) else {
                throw DownloadError.usage("cannot read checksum file \(checksumFile)")
            }
            input.checksumList = sums
        }
        return (input, namesS3)
    }
}
