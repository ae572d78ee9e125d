import RangeFetchBase
import Synchronization

/// The S3 configuration of one run (a download, a batch, a listing): the one given, else the
/// one ``S3Configuration/load(unsigned:)`` reads the first time an `s3://` URL needs it, and
/// never read again in that run. A failure to read it is kept as well: every `s3://` URL of the
/// run fails with that error, and no other URL is touched by it.
///
/// | given | first ``configuration()`` | later ones |
/// |---|---|---|
/// | a configuration | it, nothing read | it |
/// | `nil` | read once | what was read, or the same error |
package final class S3ConfigurationOnce: Sendable {
    private let given: S3Configuration?
    private let load: @Sendable () throws(DownloadError) -> S3Configuration
    private let loaded = Mutex<(result: Result<S3Configuration, DownloadError>?, reads: Int)>((nil, 0))

    /// - Parameters:
    ///   - given: the configuration the options give (``DownloadOptions/s3``), used as it is.
    ///   - load: how one is read when none is given (the tests pass their own).
    package init(given: S3Configuration?, load: @escaping @Sendable () throws(DownloadError) -> S3Configuration = {
        () throws(DownloadError) in try S3Configuration.load()
    }) {
        self.given = given
        self.load = load
    }

    /// The run's configuration, read at the first call when none was given.
    /// - Throws: the usage error of a configuration that cannot be read (the same at every call).
    package func configuration() throws(DownloadError) -> S3Configuration {
        if let given { return given }
        return try loaded.withLock { state in
            if let result = state.result { return result }
            state.reads += 1
            let result = Result { () throws(DownloadError) -> S3Configuration in try load() }
            state.result = result
            return result
        }.get()
    }

    /// How many times a configuration was read (0 or 1).
    package var reads: Int { loaded.withLock { $0.reads } }
}
