import RangeFetchBase
import RangeFetchNetwork

/// Downloads files over HTTP(S) as parallel byte ranges, resumably and verified.
///
/// ```swift
/// var options = DownloadOptions()
/// options.destination = .directory("/tmp")
/// options.connections = .automatic   // or .fixed(16)
/// let summary = try await Downloader(options: options).download("https://example.com/big.iso") { event in
///     if case .progress(let progress) = event { print(ProgressRenderer.bar(progress)) }
/// }
/// ```
///
/// The whole download runs on a dedicated thread; `events` is called on that thread, in order,
/// and should return quickly. Cancelling the calling task stops the transfers, records what is
/// on disk and throws a ``DownloadError`` of category `.interrupted`; running the same download
/// again resumes it.
public struct Downloader: Sendable {
    /// The options of every download this makes.
    public var options: DownloadOptions

    /// A downloader with `options`.
    public init(options: DownloadOptions = DownloadOptions()) {
        self.options = options
    }

    /// Downloads `url` and returns once the complete, verified file is at its final path.
    /// - Throws: ``DownloadError`` only.
    public func download(
        _ url: String, events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> DownloadSummary {
        try options.validate()
        let source = try ResolvedSource(object: url, request: options.request, s3: S3ConfigurationOnce(given: options.s3))
        let options = options.bound(to: source)
        try OutputPaths.prepareDestination(options.destination,
                                           followsLink: OutputPaths.followsLink(options.destination, options: options))
        let cancellation = CancellationFlag()
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> DownloadSummary in
            try DownloadSession(source: source, options: options, cancellation: cancellation, loop: CurlLoop(),
                                emit: events).run()
        }
    }

    /// The same download as a stream of events ending with `.finished`; a failure ends it by
    /// throwing the ``DownloadError``, and so does cancelling the task that iterates it (category
    /// `.interrupted`, thrown once the partial file is closed). Ending iteration early cancels
    /// the download.
    public func events(for url: String) -> DownloadEventStream<DownloadEvent> {
        DownloadEventStream { send in
            let summary = try await download(url, events: send)
            send(.finished(summary))
        }
    }

    /// Checks a file on disk against `expected` digests, hashing it once.
    /// - Returns: the computed digests, in the order of `expected`.
    /// - Throws: a `.checksum` error naming expected and actual on mismatch.
    public static func verify(fileAt path: String, expected: [DigestValue]) async throws(DownloadError) -> [DigestValue] {
        let cancellation = CancellationFlag()
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> [DigestValue] in
            let actual = try FileDigester.digests(ofFileAt: path, algorithms: expected.map(\.algorithm),
                                                  cancellation: cancellation)
            try DigestCheck.compare(expected: expected.map { ($0, "the checksum given") }, actual: actual, path: path)
            return actual
        }
    }

    /// Digests of a file on disk.
    public static func digests(ofFileAt path: String, algorithms: [DigestAlgorithm]) async throws(DownloadError) -> [DigestValue] {
        let cancellation = CancellationFlag()
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> [DigestValue] in
            try FileDigester.digests(ofFileAt: path, algorithms: algorithms, cancellation: cancellation)
        }
    }
}

/// Compares computed digests with expected ones.
extension Downloader {
    /// The objects under an `s3://BUCKET/PREFIX/` URL (ListObjectsV2, every page), as batch
    /// entries: each `s3://BUCKET/KEY` saved under the key's path relative to the prefix, with
    /// its MD5 to check where the ETag is one (single-part uploads; a multipart ETag is not a
    /// digest of the file and is not used). Folder markers (keys ending in `/`) are left out.
    ///
    /// Every entry is held at once: to download a prefix of any size with bounded memory, give it
    /// to a batch as ``BatchInput/prefixes``, which lists it a page at a time as files are taken.
    public func s3Entries(_ prefixURL: String) async throws(DownloadError) -> [BatchEntry] {
        let options = self.options
        let cancellation = CancellationFlag()
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> [BatchEntry] in
            let prefix = try ResolvedSource(prefix: prefixURL, request: options.request, s3: S3ConfigurationOnce(given: options.s3))
            let lister = try PrefixLister.s3(prefix, cancellation: cancellation)
            var entries: [BatchEntry] = []
            while let entry = try lister.next() { entries.append(entry) }
            return entries
        }
    }
}

enum DigestCheck {
    static func compare(expected: [(DigestValue, String)], actual: [DigestValue], path: String) throws(DownloadError) {
        for (want, source) in expected {
            guard let got = actual.first(where: { $0.algorithm == want.algorithm }) else { continue }
            guard got == want else {
                throw DownloadError(.checksumMismatch, "\(path): \(want.algorithm.rawValue) mismatch (\(source)): expected \(want.hex), got \(got.hex)")
            }
        }
    }
}
