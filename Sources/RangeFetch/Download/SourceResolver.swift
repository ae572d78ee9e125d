#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// What the server says about the file at a resolved source's URL (``ResolvedSource``), probed
/// with retries.
struct SourceResolver {
    private let url: String
    /// The run's S3 configuration, for an `s3://` object.
    private let s3: S3Configuration?
    private let options: DownloadOptions
    private let cancellation: CancellationFlag
    private let loop: CurlLoop
    private let sharing: DownloadSession.BatchSharing?
    private let emit: @Sendable (DownloadEvent) -> Void

    /// - Parameters:
    ///   - source: the user's URL resolved, and `options` bound to it (``DownloadOptions/bound(to:)``).
    ///   - sharing: a batch's budget, which the probe's connection waits for.
    ///   - emit: where retry notices go.
    init(source: ResolvedSource, options: DownloadOptions, cancellation: CancellationFlag, loop: CurlLoop,
         sharing: DownloadSession.BatchSharing?, emit: @escaping @Sendable (DownloadEvent) -> Void) {
        url = source.requestURL
        s3 = source.s3
        self.options = options
        self.cancellation = cancellation
        self.loop = loop
        self.sharing = sharing
        self.emit = emit
    }

    /// Probes, retrying transient failures (5xx, 408, 429, resets) with the retry policy.
    func probe() throws(DownloadError) -> RemoteFile {
        try probe(keepingUpTo: nil).remote
    }

    /// Probes as ``probe()`` does; with a `limit`, by a `GET` that keeps the file's first `limit`
    /// bytes (``Prober/probe(_:keepingUpTo:)``): a file that small comes whole. An `s3://` object
    /// is always probed by its signed `HEAD`.
    func probe(keepingUpTo limit: Int?) throws(DownloadError) -> Prober.Answer {
        let prober = Prober(request: options.request, cancellation: cancellation, loop: loop, names: options.nameSource)
        var retries = 0
        while true {
            do throws(DownloadError) {
                // In a batch the probe's connection counts like any other: it waits for room.
                // Waiting, it says so: a batch's lane then closes the idle connections it holds.
                let lease = sharing?.lease(host: URLParts(url)?.origin)
                if let lease, !lease.acquire() {
                    lease.wanting(1)
                    defer { lease.wanting(0) }
                    repeat {
                        if cancellation.isCancelled { throw DownloadError.cancelled() }
                        usleep(5_000)
                    } while !lease.acquire()
                }
                defer {
                    lease?.release()
                    lease?.settle(open: loop.openConnections)
                }
                do {
                    guard s3 == nil else { return Prober.Answer(remote: withPartSizes(try prober.probe(url), prober: prober)) }
                    guard let limit else { return Prober.Answer(remote: try prober.probe(url)) }
                    return try prober.probe(url, keepingUpTo: limit)
                } catch where s3 != nil && error.httpStatus.map({ $0 >= 400 }) == true {
                    throw s3Failure(error)
                }
            } catch where error.isTransient && retries + 1 < options.retry.maximumTries {
                retries += 1
                let delay = options.retry.delay(beforeRetry: retries, retryAfterSeconds: error.retryAfterSeconds,
                                                jitter: Double.random(in: 0...1))
                emit(.retrying(RetryNotice(remaining: nil, retry: retries, delaySeconds: delay, reason: error.message)))
                let until = MonotonicTime.now() + delay
                while MonotonicTime.now() < until {
                    if cancellation.isCancelled { throw .cancelled() }
                    usleep(20_000)
                }
            }
        }
    }

    /// `remote` with the part sizes of its composite checksums (S3 multipart uploads), each
    /// part's from a HEAD with `partNumber`, when there are at most
    /// ``maximumPartsLookedUp`` parts and their sizes add up to the object's; otherwise left
    /// unknown (the checksum is then reported as not checked).
    private func withPartSizes(_ remote: RemoteFile, prober: Prober) -> RemoteFile {
        guard var composites = remote.compositeChecksums, let size = remote.size else { return remote }
        var known: [Int: [Int64]] = [:]
        for index in composites.indices {
            guard let parts = composites[index].parts, (1...Self.maximumPartsLookedUp).contains(parts) else { continue }
            if known[parts] == nil {
                let separator = url.contains("?") ? "&" : "?"
                let sizes = (1...parts).map { number -> Int64? in
                    cancellation.isCancelled ? nil : try? prober.probe(url + separator + "partNumber=\(number)").size
                }.compactMap { $0 }
                known[parts] = sizes.count == parts && sizes.reduce(0, +) == size ? sizes : []
            }
            if let sizes = known[parts], !sizes.isEmpty { composites[index].partSizes = sizes }
        }
        var updated = remote
        updated.compositeChecksums = composites
        return updated
    }

    /// Most parts whose sizes are looked up, one HEAD each, for a composite checksum.
    static let maximumPartsLookedUp = 64

    /// An S3 refusal with S3's own error code and message, read from a GET's body (a HEAD has none).
    private func s3Failure(_ error: DownloadError) -> DownloadError {
        guard let configuration = s3,
              let answer = try? S3Client(configuration: configuration, request: options.request, cancellation: cancellation,
                                         loop: loop).get(url),
              let detail = S3Client.errorDetail(answer.body) else { return error }
        return error.with(message: "\(error.message); S3 said \(detail)")
    }
}

extension DownloadOptions {
    /// These options for requests of `source`: its request options (secrets bound to the origin
    /// of its ``ResolvedSource/requestURL``, S3 signing) and its S3 configuration (`nil` for an
    /// HTTP(S) URL: a batch's configuration is for its `s3://` files, and another URL's refusals
    /// are not S3's).
    func bound(to source: ResolvedSource) -> DownloadOptions {
        var options = self
        options.request = source.request
        options.s3 = source.s3
        return options
    }
}
