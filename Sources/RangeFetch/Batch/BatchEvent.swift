import RangeFetchBase
import RangeFetchNetwork

/// What a batch reports while it runs: `started`, then for each file its own events in order
/// (``DownloadEvent``, ending with `finished`) or `failed`, interleaved across files, then one
/// `finished` with every file's outcome.
public enum BatchEvent: Sendable {
    case started(BatchStart)
    /// The file at `index` is taken up next: its URL, before any event of its own (entries of a
    /// streamed list are numbered as they are reached).
    case queued(index: Int, url: String)
    /// An event of the file at `index` (0-based, in the batch's order).
    case file(index: Int, DownloadEvent)
    /// The file at `index` failed; the others go on (unless ``BatchOptions/failFast``).
    case failed(index: Int, DownloadError)
    /// Something about the batch as a whole the user should know (the batch journal not used).
    case warning(DownloadWarning)
    case finished(BatchSummary)
}

/// How a batch starts.
public struct BatchStart: Sendable, Equatable {
    /// Entries known when the batch starts: all of them, unless a list is streamed
    /// (``listStreamed``), when it is those given before the list.
    public var files: Int
    /// Files downloaded at once.
    public var jobs: Int
    /// Connections all files share.
    public var maximumConnections: Int
    /// Connections to one origin (scheme, host, port) at most.
    public var maximumConnectionsPerHost: Int
    /// Whether entries come from a list read as the batch runs (their number is known at the end).
    public var listStreamed = false
}

/// How a batch runs: files at once and the connections they share.
public struct BatchOptions: Sendable, Equatable {
    /// Files downloaded at once (`-j`).
    public var jobs = 4
    /// Connections open at once across all files (`--max-connections`).
    public var maximumConnections = 16
    /// Connections open at once to any one host (`--max-connections-per-host`).
    public var maximumConnectionsPerHost = 16
    /// Stop every other file at the first failure (the default lets them finish).
    public var failFast = false
    /// Where entries without `dir=` go, and where the batch journal (`.rangefetch-batch`) is.
    public var directory = "."
    /// Ask every entry's server again, even for a file the batch journal records as finished and
    /// unchanged on disk since. By default such a file is skipped without a request: the journal
    /// is trusted for what is on disk, but cannot know that a server's file changed since. Set
    /// this when it may have (the file is then checked as without a journal: a complete file
    /// whose server copy has not changed is kept, one that changed is fetched again).
    public var recheck = false

    /// Allowed values of ``jobs``.
    public static let jobRange = 1...256

    /// The defaults: 4 jobs, 16 connections in all and per host, into the current directory.
    public init() {}

    /// Checks the values; throws a usage error naming the bad one.
    public func validate() throws(DownloadError) {
        guard Self.jobRange.contains(jobs) else {
            throw DownloadError(.invalidOption, "jobs must be between 1 and 256 (got \(jobs))")
        }
        guard (1...1024).contains(maximumConnections), (1...1024).contains(maximumConnectionsPerHost) else {
            throw DownloadError(.invalidOption, "connection budgets must be between 1 and 1024")
        }
    }
}

/// One file's outcome.
public struct BatchFileResult: Sendable, Equatable {
    /// How a file of the batch ended.
    public enum Status: String, Sendable {
        /// Fetched (completely or the rest of a partial download) and verified.
        case downloaded
        /// Already complete at its path: nothing fetched.
        case alreadyComplete = "already-complete"
        case failed
        /// Stopped before it was done (Ctrl-C, `--fail-fast`); its partial file resumes.
        case interrupted
        /// Never started (the batch was stopped first).
        case notStarted = "not-started"
    }

    /// The entry's place in the list, from 0.
    public var index: Int
    /// The entry's URL, redacted (no password or signature).
    public var url: String
    /// How it ended.
    public var status: Status
    /// Final path, once known.
    public var path: String?
    /// Bytes of the file: its size when complete, the bytes it holds when it did not finish.
    public var bytes: Int64 = 0
    /// Bytes fetched by this run.
    public var transferredBytes: Int64 = 0
    /// Seconds this file took in this run.
    public var elapsedSeconds: Double = 0
    /// Why it failed or stopped.
    public var error: DownloadError?

    /// Average speed of this run's transfer, bytes per second.
    public var bytesPerSecond: Double { elapsedSeconds > 0 ? Double(transferredBytes) / elapsedSeconds : 0 }
}

/// A batch's outcome: every file counted, and files' own results in list order.
///
/// A batch of up to ``keptResults`` files has every file's result in ``files``; a larger one
/// keeps only those that did not end complete (failed, interrupted, not started; at most
/// ``keptResults``), so a list of millions does not hold a result per file. The counts and
/// byte totals are always of every file.
public struct BatchSummary: Sendable, Equatable {
    /// Results of the files taken up, in list order: all of them, or (past ``keptResults``
    /// files) those that did not end complete. ``omittedFiles`` says how many are left out.
    public var files: [BatchFileResult]
    /// Files taken up, every one counted (``files`` may hold fewer).
    public var fileCount: Int
    /// Files counted but whose results are not in ``files``.
    public var omittedFiles: Int { fileCount - files.count }
    /// Seconds the whole batch took.
    public var elapsedSeconds: Double
    /// Why entries were left unread: the batch was stopped (a cancel, Ctrl-C, `failFast`) before
    /// it reached the end of its entries, which are then not in ``files``; `nil` when it did.
    public var stopped: DownloadError? = nil
    /// Bytes fetched by this run, all files together.
    public var transferredBytes: Int64
    private var counts: [BatchFileResult.Status: Int]

    /// The most results a summary keeps (see the type's description).
    public static let keptResults = 10_000

    /// A summary of exactly `files`.
    public init(files: [BatchFileResult], elapsedSeconds: Double, stopped: DownloadError? = nil) {
        self.files = files
        fileCount = files.count
        self.elapsedSeconds = elapsedSeconds
        self.stopped = stopped
        transferredBytes = files.reduce(0) { $0 + $1.transferredBytes }
        counts = Dictionary(files.map { ($0.status, 1) }, uniquingKeysWith: +)
    }

    init(files: [BatchFileResult], counts: [BatchFileResult.Status: Int], fileCount: Int, transferredBytes: Int64,
         elapsedSeconds: Double) {
        self.files = files
        self.counts = counts
        self.fileCount = fileCount
        self.transferredBytes = transferredBytes
        self.elapsedSeconds = elapsedSeconds
    }

    /// How many files ended with `status`.
    public func count(_ status: BatchFileResult.Status) -> Int { counts[status] ?? 0 }
    /// Whether every file is complete at its path.
    public var succeeded: Bool {
        stopped == nil && count(.downloaded) + count(.alreadyComplete) == fileCount
    }
    /// The first failure, by file order (interruptions after it are its consequence).
    public var firstError: DownloadError? {
        files.first { $0.status == .failed }?.error ?? files.first { $0.error != nil }?.error ?? stopped
    }
}
