/// Which mirrors (``DownloadOptions/mirrors``) a download may take bytes from, and whether the
/// bytes they sent hold up: before a run, each mirror is probed and sampled against the main
/// URL (``agreeing(with:)``); after it, every range a mirror delivered with no digest to prove
/// it is spot-checked (``rangesToRefetch(mirrorExtents:remote:size:file:expected:)``), and a
/// mirror that fails is distrusted for the rest of the download.
///
/// Both do blocking network I/O on the session's thread, through its `CurlLoop`.
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
    }

    /// Mirror bytes not spot-checked yet: the resumed ones and `engine`'s.
    func uncheckedMirrorBytes(_ engine: [String: [ByteRange]]) -> [String: [ByteRange]] {
        resumedUnchecked.merging(engine) { $0 + $1 }
    }
    /// Whether the notice that mirror bytes are only spot-checked was given.
    private var saidSpotChecksOnly = false

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
            distrusted.insert(mirror)
            let bytes = extents.reduce(Int64(0)) { $0 + $1.count }
            emit(.warning(.mirrorDistrusted(url: Redaction.url(mirror), range: bad, ranges: extents.count, bytes: bytes)))
            refetch += extents
        }
        // Checked: the next round's journal holds only what its own mirrors deliver.
        resumedUnchecked = [:]
        return refetch.isEmpty ? nil : SegmentState.reopening(size: size, extents: refetch)
    }

    /// The mirrors that serve the same file as `primary`: each is probed, must have the same size
    /// and serve ranges, and must send the same bytes as the main URL at a few sampled offsets
    /// (random ones and the last block) before any byte of it is trusted. Each one left out is
    /// named in a warning, with why.
    func agreeing(with primary: RemoteFile) -> [RemoteFile] {
        // The mirrors given, then those the main URL's Link headers name (rel=duplicate).
        let candidates = options.mirrors + primary.duplicates.filter { !options.mirrors.contains($0) && $0 != url }
        guard !candidates.isEmpty, let size = primary.size, primary.isSegmentable else {
            if !options.mirrors.isEmpty { emit(.warning(.mirrorsUnusedWithoutRanges(url: Redaction.url(url)))) }
            return []
        }
        let fetcher = SmallGet(request: options.request, cancellation: cancellation, loop: loop)
        let samples = Self.sampleRanges(size: size)
        var reference: [[UInt8]] = []
        for range in samples {
            guard let answer = try? fetcher.fetch(Source(remote: primary).requestURL, range: range),
                  Self.isExactSample(answer, of: range, from: primary) else {
                emit(.warning(.mirrorsUnusedWithoutReference(url: Redaction.url(url))))
                return []
            }
            reference.append(answer.body)
        }
        // A mirror is an extra, not the download: a silent one may hold it up only briefly (16
        // silent rel=duplicate mirrors once stalled a 3 MB download for 480 s, 30 s each).
        var quick = options.request
        quick.connectTimeoutSeconds = min(quick.connectTimeoutSeconds, Self.mirrorRequestSeconds)
        quick.stallTimeoutSeconds = min(quick.stallTimeoutSeconds, Self.mirrorRequestSeconds)
        let prober = Prober(request: quick, cancellation: cancellation, loop: loop)
        let mirrorFetcher = SmallGet(request: quick, cancellation: cancellation, loop: loop)
        let deadline = MonotonicTime.now() + Self.agreementSeconds
        var agreed: [RemoteFile] = []
        var late: [String] = []
        for mirror in candidates where !distrusted.contains(mirror) {
            let name = Redaction.url(mirror)
            guard MonotonicTime.now() < deadline else {
                late.append(name)
                continue
            }
            if SourceAddress.downgradesToPlainHTTP(from: url, to: mirror) { emit(.warning(.plainHTTPMirror(url: name))) }
            do {
                let remote = try prober.probe(mirror)
                guard remote.size == size else {
                    emit(.warning(.mirrorLeftOut(url: name, why: "it has \(remote.size.map { "\($0) bytes" } ?? "no known size"), the main URL \(size)")))
                    continue
                }
                guard remote.isSegmentable else {
                    emit(.warning(.mirrorLeftOut(url: name, why: "it serves no byte ranges")))
                    continue
                }
                var differs: ByteRange?
                for (range, bytes) in zip(samples, reference) {
                    let answer = try mirrorFetcher.fetch(Source(remote: remote).requestURL, range: range)
                    if !Self.isExactSample(answer, of: range, from: remote) || answer.body != bytes {
                        differs = range
                        break
                    }
                }
                if let differs {
                    emit(.warning(.mirrorLeftOut(url: name, why: "it serves other bytes than the main URL at bytes \(differs.httpRangeSpec)")))
                    continue
                }
                agreed.append(remote)
            } catch {
                emit(.warning(.mirrorLeftOut(url: name, why: error.message)))
            }
        }
        if !late.isEmpty {
            let more = late.count > 1 ? "; \(late.count - 1) more mirrors left out too" : ""
            emit(.warning(.mirrorLeftOut(url: late[0], why: "not checked within the \(Int(Self.agreementSeconds)) s mirrors may take before the download\(more)")))
        }
        if !agreed.isEmpty, !DownloadOptions.provesMirrors(options.expectedDigests(for: primary)), !saidSpotChecksOnly {
            saidSpotChecksOnly = true
            emit(.warning(.mirrorsSpotCheckedOnly))
        }
        return agreed
    }

    /// Seconds a mirror's probe or sample may take to connect, or go without a byte.
    static let mirrorRequestSeconds = 5
    /// Seconds all mirrors together may take to be checked before the download starts; those
    /// not reached by then are left out, with one warning.
    static let agreementSeconds = 10.0

    /// Whether a sample answer is a 206 with exactly `range` of the probed file (its size and
    /// validators), as a download request's answer must be.
    static func isExactSample(_ answer: SmallGet.Answer, of range: ByteRange, from remote: RemoteFile) -> Bool {
        ResponseValidator(remote: remote, asked: range, toUserURL: true).verdict(answer.head) == .accept
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
