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
    public var options: DownloadOptions

    public init(options: DownloadOptions = DownloadOptions()) {
        self.options = options
    }

    /// Downloads `url` and returns once the complete, verified file is at its final path.
    /// - Throws: ``DownloadError`` only.
    public func download(
        _ url: String, events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> DownloadSummary {
        try options.validate()
        _ = try URLParts.validate(url)
        try OutputPaths.prepareDestination(options.destination)
        let cancellation = CancellationFlag()
        let options = self.options
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> DownloadSummary in
            try DownloadSession(url: url, options: options, cancellation: cancellation, emit: events).run()
        }
    }

    /// The same download as a stream of events ending with `.finished`; failures end the stream
    /// with a ``DownloadError``. Ending iteration early cancels the download.
    public func events(for url: String) -> AsyncThrowingStream<DownloadEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let summary = try await download(url) { continuation.yield($0) }
                    continuation.yield(.finished(summary))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Checks a file on disk against `expected` digests, hashing it once.
    /// - Returns: the computed digests, in the order of `expected`.
    /// - Throws: a `.checksum` error naming expected and actual on mismatch.
    public static func verify(fileAt path: String, expected: [DigestValue]) async throws(DownloadError) -> [DigestValue] {
        let cancellation = CancellationFlag()
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> [DigestValue] in
            let actual = try FileDigester.digests(ofFileAt: path, algorithms: expected.map(\.algorithm))
            try DigestCheck.compare(expected: expected.map { ($0, "--checksum") }, actual: actual, path: path)
            return actual
        }
    }

    /// Digests of a file on disk.
    public static func digests(ofFileAt path: String, algorithms: [DigestAlgorithm]) async throws(DownloadError) -> [DigestValue] {
        try await BlockingWork.run(cancellation: CancellationFlag()) { () throws(DownloadError) -> [DigestValue] in
            try FileDigester.digests(ofFileAt: path, algorithms: algorithms)
        }
    }
}

/// Compares computed digests with expected ones.
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
