/// What a batch reports while it runs: `started`, then for each file its own events in order
/// (``DownloadEvent``, ending with `finished`) or `failed`, interleaved across files, then one
/// `finished` with every file's outcome.
public enum BatchEvent: Sendable {
    case started(BatchStart)
    /// An event of the file at `index` (0-based, in the batch's order).
    case file(index: Int, DownloadEvent)
    /// The file at `index` failed; the others go on (unless ``BatchOptions/failFast``).
    case failed(index: Int, DownloadError)
    case finished(BatchSummary)
}

/// How a batch starts.
public struct BatchStart: Sendable, Equatable {
    public var files: Int
    /// Files downloaded at once.
    public var jobs: Int
    public var maximumConnections: Int
    public var maximumConnectionsPerHost: Int
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
    /// Where entries without `dir=` go.
    public var directory = "."

    public static let jobRange = 1...256

    public init() {}

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

    public var index: Int
    public var url: String
    public var status: Status
    /// Final path, once known.
    public var path: String?
    public var bytes: Int64 = 0
    /// Bytes fetched by this run.
    public var transferredBytes: Int64 = 0
    public var elapsedSeconds: Double = 0
    /// Why it failed or stopped.
    public var error: DownloadError?

    public var bytesPerSecond: Double { elapsedSeconds > 0 ? Double(transferredBytes) / elapsedSeconds : 0 }
}

/// Every file's outcome, in the batch's order.
public struct BatchSummary: Sendable, Equatable {
    public var files: [BatchFileResult]
    public var elapsedSeconds: Double

    public var transferredBytes: Int64 { files.reduce(0) { $0 + $1.transferredBytes } }
    public func count(_ status: BatchFileResult.Status) -> Int { files.filter { $0.status == status }.count }
    /// Whether every file is complete at its path.
    public var succeeded: Bool { files.allSatisfy { $0.status == .downloaded || $0.status == .alreadyComplete } }
    /// The first failure, by file order (interruptions after it are its consequence).
    public var firstError: DownloadError? {
        files.first { $0.status == .failed }?.error ?? files.first { $0.error != nil }?.error
    }
}
