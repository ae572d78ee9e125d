import RangeFetchBase
import RangeFetchNetwork
import FoundationEssentials

extension Downloader {
    /// ``download(_:events:)`` for a `URL` (`http`, `https` or `s3`).
    public func download(
        _ url: URL, events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> DownloadSummary {
        try await download(url.absoluteString, events: events)
    }

    /// ``events(for:)-(String)`` for a `URL`.
    public func events(for url: URL) -> DownloadEventStream<DownloadEvent> {
        events(for: url.absoluteString)
    }
}

extension BatchEntry {
    /// An entry for `url`, with the options an `-i` list line can give it.
    public init(url: URL, output: String? = nil, directory: String? = nil, checksums: [DigestValue] = []) {
        self.init(url: url.absoluteString, output: output, directory: directory, checksums: checksums)
    }
}
