import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch

/// The options only an `hf://` repository takes.
struct HubOptionGroup: ParsableArguments {
    @Option(name: .customLong("include"), help: ArgumentHelp("With hf://: download only the repository's files matching this glob (* also matches /; DIR/ means everything under DIR); repeat for several. As hf download --include. Example: --include '*.safetensors' --include config.json", valueName: "glob"))
    var include: [String] = []

    @Option(name: .customLong("exclude"), help: ArgumentHelp("With hf://: leave out the files matching this glob; repeat for several. Example: --exclude 'original/*'", valueName: "glob"))
    var exclude: [String] = []

    @Option(name: .customLong("cache-dir"), help: ArgumentHelp("With hf://: the Hub's cache to fill (default $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), laid out as huggingface_hub lays it out so its tools load the files offline. Example: --cache-dir /scratch/hf", valueName: "dir"))
    var cacheDirectory: String?

    @Option(name: .customLong("local-dir"), help: ArgumentHelp("With hf://: put the files themselves in this folder, under their paths in the repository, instead of the Hub's cache (as hf download --local-dir, with the metadata it keeps in DIR/.cache/huggingface, so a rerun fetches only what changed). Example: --local-dir ./qwen", valueName: "dir"))
    var localDirectory: String?

    @Flag(name: .customLong("force-download"), help: ArgumentHelp("With hf://: fetch every selected file again, even one already in place (as hf download --force-download; --overwrite does the same). Each is replaced whole once its new bytes are proven: until then the old file stays, and a program reading it keeps its bytes."))
    var forceDownload = false

    /// Any of these options was given.
    var isGiven: Bool {
        !include.isEmpty || !exclude.isEmpty || cacheDirectory != nil || localDirectory != nil || forceDownload
    }
}

/// `rangefetch hf://ORG/NAME[@REV]`: a Hugging Face repository into the Hub's cache.
extension Get {
    var isHub: Bool { urls.count == 1 && HubRepository.isHubURL(urls[0]) }

    func validateHub() throws {
        if output != nil || directory != nil {
            throw ValidationError("hf:// fills the Hub's cache (--cache-dir DIR, or HF_HUB_CACHE), or a folder with --local-dir DIR; -o and -d do not apply")
        }
        if hub.localDirectory != nil && hub.cacheDirectory != nil {
            throw ValidationError("use either --local-dir DIR (the files themselves) or --cache-dir DIR (the Hub's cache), not both")
        }
        if !checks.checksums.isEmpty || checks.checksumFile != nil {
            throw ValidationError("hf:// checks every file against the Hub's own listing (sha256 or git id); --checksum does not apply")
        }
        guard BatchOptions.jobRange.contains(batch.jobs) else { throw ValidationError("-j/--jobs must be between 1 and 256 (got \(batch.jobs))") }
    }

    func runHub() async throws {
        let reporter = BatchReporter(json: json, quiet: quiet, verbose: verbose)
        let summary: HubSummary
        do {
            let repository = try HubRepository(urls[0])
            var settings = HubSettings.fromEnvironment()
            if let cacheDirectory = hub.cacheDirectory { settings.cache = cacheDirectory }
            let options = try makeOptions()
            // -j, --fail-fast and the connection limits as for any list, but 64 connections to
            // the Hub's CDN unless told otherwise (HubSettings.connections); its directory is the
            // cache's.
            let given = batchOptions(connections: (HubSettings.connections, HubSettings.connections))
            let localFolder = hub.localDirectory
            let filter = HubFileFilter(include: hub.include, exclude: hub.exclude, shard: batch.shard?.selector)
            let force = hub.forceDownload || overwrite
            summary = try await Interrupts.cancelling { [settings, given, localFolder] () async throws(DownloadError) -> HubSummary in
                try await Downloader(options: options).download(hub: repository, settings: settings, filter: filter,
                                                                batch: given, localFolder: localFolder, force: force) { reporter.handle($0) }
            }
        } catch {
            let status = ExitStatus.code(for: error)
            reporter.fail(error, status: status)
            throw CommandFailure(status: status)
        }
        if let fetched = summary.batch {
            reporter.finish(fetched)
            if !fetched.succeeded, let error = fetched.firstError {
                throw CommandFailure(status: ExitStatus.code(for: error))
            }
        }
        if summary.selected == 0 && batch.shard == nil {
            writeOut("warning: \(summary.repository.description): no file matches --include/--exclude\n", to: STDERR_FILENO)
        } else if !quiet && !json {
            let large = summary.batch?.fileCount ?? 0
            writeOut("\(summary.repository.description): \(summary.selected) files at commit \(summary.commit.prefix(12)): \(summary.alreadyCached) already in place, \(summary.smallFetched) small fetched from the Hub, \(large) large from its CDN\n", to: STDERR_FILENO)
        }
        // As `hf download`: the snapshot (or local) folder on stdout, for scripts.
        if !json { writeOut(summary.snapshot + "\n", to: STDOUT_FILENO) }
    }
}
