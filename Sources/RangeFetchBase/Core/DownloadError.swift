/// Why a download (or a verification) failed, with a message a user can act on.
///
/// A struct around a private code, so new cases can be added without breaking callers; switch on
/// ``category`` (which maps to the CLI's exit codes) and show ``message``.
public struct DownloadError: Error, Sendable, CustomStringConvertible, Equatable {
    /// Broad classes of failure; the CLI maps each to an exit code.
    public struct Category: Hashable, Sendable, CustomStringConvertible {
        package let name: String
        /// Bad input: URL, options, arguments.
        public static let usage = Category(name: "usage")
        /// DNS, connection, TLS, timeouts, HTTP errors, servers that break the protocol.
        public static let network = Category(name: "network")
        /// The local file system: missing directory, permissions, disk full.
        public static let fileSystem = Category(name: "file system")
        /// A digest did not match.
        public static let checksum = Category(name: "checksum")
        /// The download was cancelled (Ctrl-C, SIGTERM, task cancellation).
        public static let interrupted = Category(name: "interrupted")
        /// Anything else.
        public static let other = Category(name: "other")
        /// The category's name (`network`, `file system`, ...).
        public var description: String { name }

        package init(name: String) {
            self.name = name
        }
    }

    package enum Code: Equatable, Sendable {
        case invalidURL
        case unsupportedScheme
        case invalidOption
        case transport(curlCode: Int32)
        case httpStatus(Int)
        case protocolViolation
        /// Internal: the server answered a range request with the whole file; fall back to one stream.
        case rangesNotHonoured
        case remoteChanged
        case fileSystem(errno: Int32)
        case outputExists
        case busy
        case checksumMismatch
        case cancelled
        /// A shared library needed for this download could not be loaded.
        case missingLibrary
    }

    /// What the user can do about a failure: the library describes the situation in ``message``
    /// and leaves the words of the remedy (flags, commands) to its front end.
    public enum Remedy: Sendable, Equatable {
        /// Running the same download again resumes it.
        case runAgainToResume
        /// Free disk space, then run it again (it resumes).
        case freeSpaceThenRunAgain
        /// Choose a writable place for the file.
        case chooseWritableLocation
        /// Give credentials (a user and password, or a token header).
        case giveCredentials
        /// Wait for the other process, or choose another output path.
        case waitOrChooseOtherOutput
        /// Remove the file in the way (another user's, a link, not a plain file), or choose
        /// another output path.
        case removeStrayFile
        /// Resume from the file already there, or replace it.
        case continueOrOverwrite
        /// Replace the file already there.
        case overwrite
        /// Download into the directory instead of onto it.
        case downloadIntoDirectory
        /// Fetch the prefix as a batch of its objects.
        case fetchPrefixAsBatch
        /// Trust the server's certificate (a CA file), or, at one's own risk, skip the check.
        case trustCertificate
        /// Use another proxy, or none for this host.
        case fixProxy
        /// Give S3 credentials, or send unsigned requests to a public bucket.
        case giveS3Credentials
    }

    package let code: Code
    /// What the user can do about it, when there is something; ``message`` does not say it.
    public var remedy: Remedy?
    /// The server's `Retry-After`, when it sent one with this failure.
    package var retryAfterSeconds: Double?
    /// One line describing what failed, naming the URL, path, status or errno involved. URLs in
    /// it are redacted (`Redaction`): no password or signature.
    public let message: String
    /// The URL of the request or source the failure is about, as ``message`` names it, redacted
    /// (`Redaction.url(_:)`: no password or signature); `nil` when the failure is about no URL
    /// (a local file, an option). A mirror's failure carries the mirror's URL, a failure after a
    /// redirect the URL the request went to.
    public let url: String?

    package init(_ code: Code, _ message: String, url: String? = nil, remedy: Remedy? = nil) {
        self.code = code
        self.message = Redaction.text(message)
        self.url = url.map(Redaction.url)
        self.remedy = remedy
    }

    /// The same failure told by `message` (which should still name ``url``): its code, URL,
    /// remedy and `Retry-After` are kept. Use it to add to or reword a message, so nothing but
    /// the words changes.
    package func with(message: String) -> DownloadError {
        var error = DownloadError(code, message, url: url, remedy: remedy)
        error.retryAfterSeconds = retryAfterSeconds
        return error
    }

    /// The broad class of this failure.
    public var category: Category {
        switch code {
        case .invalidURL, .unsupportedScheme, .invalidOption, .outputExists: .usage
        case .transport, .httpStatus, .protocolViolation, .remoteChanged, .rangesNotHonoured: .network
        case .fileSystem, .busy: .fileSystem
        case .checksumMismatch: .checksum
        case .cancelled: .interrupted
        case .missingLibrary: .other
        }
    }

    /// The HTTP status for failures caused by one, else `nil`.
    public var httpStatus: Int? {
        if case .httpStatus(let status) = code { return status }
        return nil
    }

    /// The errno for local file-system failures, else `nil`.
    public var errno: Int32? {
        if case .fileSystem(let value) = code { return value }
        return nil
    }

    /// Whether retrying the same request later could succeed (connection failures, 5xx, 408, 429).
    public var isTransient: Bool {
        switch code {
        case .transport(let curlCode):
            // 6: could not resolve host; 1: unsupported protocol; 3: malformed URL — not transient.
            return ![1, 3, 6, 60, 77].contains(curlCode)
        case .httpStatus(let status): return status >= 500 || status == 408 || status == 429
        default: return false
        }
    }

    /// The message.
    public var description: String { message }

    package static func cancelled() -> DownloadError {
        DownloadError(.cancelled, "interrupted")
    }
}

extension DownloadError {
    /// A usage error with `message`, for front ends built on the library.
    public init(usageMessage message: String) {
        self.init(.invalidOption, message)
    }
}
