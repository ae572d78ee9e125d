import RangeFetchBase
import RangeFetchNetwork

/// Which mirrors (``DownloadOptions/mirrors``) a download may take bytes from, and whether the
/// bytes they sent hold up: once per download, while the main URL already downloads, every
/// mirror is sampled against the main URL in parallel on a thread of its own (``begin(with:)``,
/// ``MirrorChecks``) and joins the running engine as it agrees; after each run, every range a
/// mirror delivered with no digest to prove it is spot-checked
/// (``rangesToRefetch(mirrorExtents:remote:size:file:expected:)``, blocking, on the session's
/// thread and loop), and a mirror that fails is distrusted for the rest of the download.
final class MirrorAgreement {
    private let url: String
    private let options: DownloadOptions
    private let cancellation: CancellationFlag
    private let loop: CurlLoop
    private let emit: @Sendable (DownloadEvent) -> Void

    /// - Parameters:
    ///   - url: the main URL, for messages.
    ///   - emit: where warnings about mirrors left out or dropped go.
    init(url: String, options: DownloadOptions, cancellation: CancellationFlag, loop: CurlLoop,
         emit: @escaping @Sendable (DownloadEvent) -> Void) {
        self.url = url
        self.options = options
        self.cancellation = cancellation
        self.loop = loop
        self.emit = emit
    }

    /// Mirrors whose bytes failed a spot check in this download: never used again in it.
    private var distrusted: Set<String> = []
    /// Mirror bytes an interrupted run recorded as not yet spot-checked (from the journal).
    var resumedUnchecked: [String: [ByteRange]] = [:]

    /// Uses `mirror` no more in this download (it sent bytes proven wrong).
    func distrust(_ mirror: String) {
        distrusted.insert(mirror)
        feed.distrust(mirror)
    }

    /// Mirror bytes not spot-checked yet: the resumed ones and `engine`'s.
    func uncheckedMirrorBytes(_ engine: [String: [ByteRange]]) -> [String: [ByteRange]] {
        resumedUnchecked.merging(engine) { $0 + $1 }
    }

    /// After a run that took bytes from mirrors with no cryptographic digest to check them by (a
    /// CRC proves nothing against a mirror that means harm): each mirror's
    /// ranges (`mirrorExtents`, the engine's, and the resumed ones) are spot-checked against the
    /// main URL (``MirrorSpotCheck``). A mirror that fails is dropped and named; returns the plan
    /// that fetches its ranges again, or `nil` when every mirror agreed.
    func rangesToRefetch(mirrorExtents: [String: [ByteRange]], remote: RemoteFile, size: Int64?, file: PartialFile,
                         expected: [(DigestValue, String)]) throws(DownloadError) -> [SegmentState]? {
        let unchecked = uncheckedMirrorBytes(mirrorExtents)
        guard !DownloadOptions.provesMirrors(expected), let size, !unchecked.isEmpty else { return nil }
        let fetcher = SmallGet(request: options.request, cancellation: cancellation, loop: loop)
        var refetch: [ByteRange] = []
        for (mirror, extents) in unchecked.sorted(by: { $0.key < $1.key }) {
            let references = Source(remote: remote).referenceURLs
            guard let bad = try MirrorSpotCheck.firstMismatch(extents: extents, file: file, referenceURLs: references,
                                                              fetcher: fetcher) else { continue }
            distrust(mirror)
            let bytes = extents.reduce(Int64(0)) { $0 + $1.count }
            emit(.warning(.mirrorDistrusted(url: Redaction.url(mirror), range: bad, ranges: extents.count, bytes: bytes)))
            refetch += extents
        }
        // Checked: the next round's journal holds only what its own mirrors deliver.
        resumedUnchecked = [:]
        return refetch.isEmpty ? nil : SegmentState.reopening(size: size, extents: refetch)
    }

    /// The mirrors' feed for this download's engines: mirrors join a running engine as they
    /// agree (``begin(with:)``), and a refetch round's engine starts with those agreed so far.
    private(set) var feed = MirrorFeed()
    private var checks: (thread: BesideThread, stop: CancellationFlag)?
    private var begun = false

    /// Starts checking the mirrors of `primary`, once per download, on a thread of its own, while
    /// the main URL already downloads: the mirrors given, then those the main URL's Link headers
    /// name (rel=duplicate), all at once (``MirrorChecks``); backups (a metalink's or a header's
    /// URLs past their caps) only as agreed mirrors are dropped. Each mirror that agrees joins
    /// the running engine through ``feed``; each one left out is named in a warning, with why.
    /// A later call does nothing until ``finish()``.
    func begin(with primary: RemoteFile) {
        guard !begun else { return }
        begun = true
        let candidates = MirrorCandidates(main: url, given: options.mirrors.filter { !distrusted.contains($0) },
                                          duplicates: primary.duplicates.filter { !distrusted.contains($0) },
                                          backups: (options.backupMirrors + primary.backupDuplicates).filter { !distrusted.contains($0) })
        guard !candidates.isEmpty else { return }
        guard let size = primary.size, primary.isSegmentable else {
            if !options.mirrors.isEmpty { emit(.warning(.mirrorsUnusedWithoutRanges(url: Redaction.url(url)))) }
            return
        }
        // The main URL's own blocks, to compare the mirrors with: a few small requests on the
        // probe's connection, before the transfer (run beside it, they would take a connection
        // more than --max-connections-per-host allows).
        let samples = Self.sampleRanges(size: size)
        let fetcher = SmallGet(request: options.request, cancellation: cancellation, loop: loop)
        var references: [[UInt8]] = []
        for range in samples {
            guard let answer = try? fetcher.fetch(Source(remote: primary).requestURL, range: range),
                  Self.isExactSample(answer, of: range, from: primary), answer.body.count == Int(range.count) else {
                if !cancellation.isCancelled { emit(.warning(Self.referenceFailure(url: url))) }
                return
            }
            references.append(answer.body)
        }
        // A mirror is an extra, not the download: a silent one may hold its check up only briefly
        // (16 silent rel=duplicate mirrors once stalled a 3 MB download for 480 s, 30 s each).
        var quick = options.request
        quick.connectTimeoutSeconds = min(quick.connectTimeoutSeconds, Self.mirrorRequestSeconds)
        quick.stallTimeoutSeconds = min(quick.stallTimeoutSeconds, Self.mirrorRequestSeconds)
        let setup = MirrorChecks.Setup(primary: primary, mainURL: url, size: size, samples: samples,
                                       references: references, mirror: quick,
                                       provesMirrors: DownloadOptions.provesMirrors(options.expectedDigests(for: primary)))
        let stop = CancellationFlag()
        let (feed, share) = (self.feed, loop.share)
        let thread = BesideThread {
            guard let loop = try? CurlLoop(share: share) else {
                feed.warn(.mirrorLeftOut(url: Redaction.url(candidates.first.first ?? setup.mainURL), why: "no transfer loop could be made for the mirrors"))
                return
            }
            feed.onDrop { [weak loop] in loop?.wakeup() }
            let checks = MirrorChecks(setup, candidates: candidates, feed: feed, loop: loop, stop: stop)
            try? loop.run(checks, cancellation: stop)
            feed.onDrop {}
            checks.close()
        }
        // No thread to be had (resource limits): the main URL alone.
        guard let thread else { return }
        checks = (thread, stop)
    }

    /// Ends the mirror checks still running (the download is over, or starts again) and says
    /// what they still had to say, on the download's thread. The next ``begin(with:)`` checks
    /// afresh.
    func finish() {
        if let (thread, stop) = checks {
            stop.cancel()
            thread.join()
            checks = nil
        }
        for warning in feed.takeWarnings() { emit(.warning(warning)) }
        if begun { feed = MirrorFeed() }
        begun = false
    }

    /// The warning when the main URL's own blocks cannot be had to compare mirrors with.
    static func referenceFailure(url: String) -> DownloadWarning {
        .mirrorsUnusedWithoutReference(url: Redaction.url(url))
    }

    /// Seconds a mirror's sample may take to connect, or go without a byte.
    static let mirrorRequestSeconds = 5
    /// Seconds a mirror's check may take (the main URL downloads meanwhile); one not done by
    /// then is left out, named in one warning with the others.
    static let agreementSeconds = 10.0

    /// Whether a sample answer is a 206 with exactly `range` of the probed file (its size and
    /// validators), as a download request's answer must be.
    static func isExactSample(_ answer: SmallGet.Answer, of range: ByteRange, from remote: RemoteFile) -> Bool {
        isExactSample(answer.head, of: range, from: remote)
    }

    /// Whether `head` answers `range` of `remote` exactly (see the other ``isExactSample(_:of:from:)``).
    static func isExactSample(_ head: ResponseHead, of range: ByteRange, from remote: RemoteFile) -> Bool {
        ResponseValidator(remote: remote, asked: range, toUserURL: true).verdict(head) == .accept
    }

    /// Where a mirror's bytes are compared with the main URL's: three random 4 KiB blocks and
    /// the last one (the whole file when it is smaller).
    static func sampleRanges(size: Int64) -> [ByteRange] {
        let block: Int64 = 4096
        guard size > 4 * block else { return [ByteRange(0, size)] }
        var ranges = (0..<3).map { _ -> ByteRange in
            let start = Int64.random(in: 0..<(size - block)) / block * block
            return ByteRange(start, start + block)
        }
        ranges.append(ByteRange(size - block, size))
        return ranges
    }
}
