import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Where a download starts (``ResumeDecision``): a file already at the final path, then the
/// partial file and its journal. Tables only: no socket, no file.
struct ResumeDecisionTests {
    static let url = "https://example.test/data.bin"
    static let size: Int64 = 8 << 20
    static let path = "/out/data.bin.part"
    static let final = "/out/data.bin"
    static let planner = SegmentPlanner(connections: 4, minimumSegmentBytes: 1 << 20)

    static func remote(url: String = url, size: Int64? = size, ranges: Bool = true, etag: String? = "\"v2\"") -> RemoteFile {
        RemoteFile(url: url, size: size, acceptsRanges: ranges, etag: etag, lastModified: nil,
                   suggestedName: "data.bin", advertisedDigests: [])
    }

    /// A journal of `remote` with half of its first segment written.
    static func record(of remote: RemoteFile = remote(), mirrorBytes: [String: [ByteRange]]? = nil) -> JournalRecord {
        var segments = planner.plan(size: remote.size ?? 0).map { SegmentState(range: $0) }
        segments[0] = SegmentState(range: segments[0].range, written: segments[0].range.count / 2)
        var record = JournalRecord(file: remote.identity, size: remote.size ?? 0, segments: segments)
        record.uncheckedMirrorBytes = mirrorBytes
        return record
    }

    static var freshPlan: [SegmentState] { planner.plan(size: size).map { SegmentState(range: $0) } }

    static func partial(bytes: Int64 = size, journal: JournalStore.Loaded?, remote: RemoteFile = remote(),
                        identity: RemoteFile? = nil, restarting: Bool = false, adopted: Int64 = 0) -> ResumeDecision.Partial {
        ResumeDecision.Partial(path: path, bytes: bytes, adoptedPrefixBytes: adopted, journal: journal, remote: remote,
                               identity: (identity ?? remote).identity, size: size, restarting: restarting, planner: planner)
    }

    // MARK: The partial file and its journal

    @Test func resumesTheJournalsSegmentsWhenItNamesThisVersionAndThePartialHasTheFullSize() {
        let mirrored = ["https://mirror.test/data.bin": [ByteRange(0, 4096)]]
        let record = Self.record(mirrorBytes: mirrored)
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(record)))
            == .resume(record.segments, uncheckedMirrorBytes: mirrored))
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(Self.record())))
            == .resume(Self.record().segments, uncheckedMirrorBytes: [:]))
    }

    /// A journal's unchecked mirror bytes count only where its segments hold bytes: those past
    /// a segment's written end are fetched again from the main URL, and a check landing on them
    /// would vouch for the mirror's recorded bytes with the main URL's.
    @Test func onlyTheMirrorBytesTheSegmentsHoldAreLeftToCheck() {
        let half = Self.record().segments[0].written
        let mirrored = ["https://a.test/f": [ByteRange(half - 4096, half + 4096)],
                        "https://b.test/f": [ByteRange(half, half + 8192)]]
        let record = Self.record(mirrorBytes: mirrored)
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(record)))
            == .resume(record.segments, uncheckedMirrorBytes: ["https://a.test/f": [ByteRange(half - 4096, half)]]))
    }

    @Test(arguments: [
        // (ranges, within, clipped)
        ([ByteRange(0, 10)], [ByteRange(5, 20)], [ByteRange(5, 10)]),
        ([ByteRange(0, 10), ByteRange(10, 20)], [ByteRange(0, 4), ByteRange(8, 12), ByteRange(30, 40)],
         [ByteRange(0, 4), ByteRange(8, 12)]),
        ([ByteRange(0, 10)], [ByteRange(10, 20)], []),
        ([ByteRange(5, 6)], [], []),
        ([ByteRange(15, 25), ByteRange(0, 3)], [ByteRange(0, 100)], [ByteRange(0, 3), ByteRange(15, 25)]),
    ])
    func clippingKeepsOnlyTheBytesInsideTheBounds(ranges: [ByteRange], within: [ByteRange], clipped: [ByteRange]) {
        #expect(ByteRange.clipped(ranges, to: within) == clipped)
    }

    @Test func anS3DownloadResumesUnderTheURLItsJournalNames() {
        let s3 = Self.remote(url: "s3://bucket/data.bin")
        let endpoint = Self.remote(url: "https://bucket.s3.test/data.bin")
        let record = Self.record(of: s3)
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(record), remote: endpoint, identity: s3))
            == .resume(record.segments, uncheckedMirrorBytes: [:]))
    }

    /// A presigned link given again with a fresh signature resumes the partial download; the
    /// journal keeps the link without its signature (``JournalIdentity``).
    @Test func aLinkSignedAgainResumesItsJournal() {
        let signed = "https://b.s3.test/data.bin?X-Amz-Date=20261127T100000Z&X-Amz-Expires=60&X-Amz-Signature=aaaa"
        let resigned = "https://b.s3.test/data.bin?X-Amz-Date=20261127T120000Z&X-Amz-Expires=3600&X-Amz-Signature=bbbb"
        let record = Self.record(of: Self.remote(url: signed))
        #expect(record.url == "https://b.s3.test/data.bin" && record.urlDigest == nil)
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(record), remote: Self.remote(url: resigned)))
            == .resume(record.segments, uncheckedMirrorBytes: [:]))
    }

    /// A journal written before identities left signatures out names the URL redacted whole: the
    /// same URL still resumes it.
    @Test func aJournalOfTheRedactedWholeURLStillResumes() {
        let signed = "https://b.s3.test/data.bin?X-Amz-Date=20261127T100000Z&X-Amz-Signature=aaaa"
        var record = Self.record(of: Self.remote(url: signed))
        record.url = Redaction.url(signed)
        record.finalURL = record.url
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(record), remote: Self.remote(url: signed)))
            == .resume(record.segments, uncheckedMirrorBytes: [:]))
    }

    /// Two URLs that differ only in a redacted value are two downloads, told apart by the digest
    /// the journal keeps instead of the value.
    @Test func anotherSecretValueIsAnotherDownload() {
        let record = Self.record(of: Self.remote(url: "https://h.test/get?code=AAAA"))
        #expect(record.url == "https://h.test/get?code=REDACTED" && record.urlDigest != nil)
        let other = Self.remote(url: "https://h.test/get?code=BBBB")
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(record), remote: other))
            == .startOver(Self.freshPlan, reason: "\(Self.path) belongs to a download of https://h.test/get?code=REDACTED, not https://h.test/get?code=BBBB"))
        #expect(ResumeDecision.partialFile(Self.partial(journal: .record(record), remote: Self.remote(url: "https://h.test/get?code=AAAA")))
            == .resume(record.segments, uncheckedMirrorBytes: [:]))
    }

    @Test(arguments: [
        ("another URL's journal", Self.partial(journal: .record(Self.record(of: Self.remote(url: "https://other.test/x.bin")))),
         "\(path) belongs to a download of https://other.test/x.bin, not \(url)"),
        ("the file changed", Self.partial(journal: .record(Self.record(of: Self.remote(etag: "\"v1\"")))),
         "the file on the server changed since the partial download (8388608 bytes, ETag \"v1\" → 8388608 bytes, ETag \"v2\")"),
        ("the file changed size", Self.partial(journal: .record(Self.record(of: Self.remote(size: 4 << 20)))),
         "the file on the server changed since the partial download (4194304 bytes, ETag \"v2\" → 8388608 bytes, ETag \"v2\")"),
        ("partial shorter than the journal says", Self.partial(bytes: 1000, journal: .record(Self.record())),
         "\(path) is 1000 bytes but its journal expects 8388608"),
        ("unreadable journal", Self.partial(journal: .unreadable("bad checksum")),
         "ignoring an unusable journal (bad checksum)"),
        ("bytes but no journal", Self.partial(bytes: 5, journal: .missing),
         "\(path) has no journal, so its bytes cannot be trusted"),
        ("restart asked for", Self.partial(bytes: 5, journal: nil), "a restart was asked for"),
    ] as [(String, ResumeDecision.Partial, String)])
    func startsOverSayingWhy(_ name: String, partial: ResumeDecision.Partial, reason: String) {
        #expect(ResumeDecision.partialFile(partial) == .startOver(Self.freshPlan, reason: reason), "\(name)")
    }

    @Test(arguments: [
        // Nothing on disk yet: nothing to say.
        ("empty partial, no journal", Self.partial(bytes: 0, journal: .missing)),
        ("empty partial, restart asked for", Self.partial(bytes: 0, journal: nil)),
        // A journal of the old version, found in a run that already said the file changed.
        ("changed while restarting", Self.partial(journal: .record(Self.record(of: Self.remote(etag: "\"v1\""))), restarting: true)),
    ] as [(String, ResumeDecision.Partial)])
    func startsOverQuietly(_ name: String, partial: ResumeDecision.Partial) {
        #expect(ResumeDecision.partialFile(partial) == .startOver(Self.freshPlan, reason: nil), "\(name)")
    }

    @Test func aSmallFilesBytesWithoutAJournalAreDroppedQuietly() {
        let small = DownloadSession.smallFileBytes - 1
        var partial = Self.partial(bytes: 5, journal: .missing)
        partial.size = small
        let plan = Self.planner.plan(size: small).map { SegmentState(range: $0) }
        #expect(ResumeDecision.partialFile(partial) == .startOver(plan, reason: nil))
    }

    @Test func anAdoptedPrefixIsWrittenAndOnlyTheRestIsPlanned() {
        let prefix: Int64 = 3_000_000
        let start = ResumeDecision.partialFile(Self.partial(bytes: prefix, journal: .missing, adopted: prefix))
        guard case .resume(let segments, let unchecked) = start else {
            Issue.record("expected a resume, got \(start)")
            return
        }
        #expect(unchecked.isEmpty)
        #expect(segments.first == SegmentState(range: ByteRange(0, prefix), written: prefix))
        #expect(segments.writtenBytes == prefix)
        // The segments cover the file exactly, in order.
        #expect(segments.first?.range.lower == 0 && segments.last?.range.upper == Self.size)
        #expect(zip(segments, segments.dropFirst()).allSatisfy { $0.range.upper == $1.range.lower })
    }

    // MARK: A file already at the final path

    @Test(arguments: [
        (DownloadOptions.ExistingFilePolicy.overwrite, Int64(5), FileTrust?.some(.own), ResumeDecision.FinalFile.replace),
        (.overwrite, Int64(5), .ownedBy(uid: 4242), .replace),
        (.refuse, size, .own, .complete(bytes: size)),
        (.refuse, size, .linked(count: 2), .complete(bytes: size)),
        (.continueFrom, 1000, .own, .adopt(prefixBytes: 1000)),
        (.continueFrom, size, .own, .adopt(prefixBytes: size)),
        (.continueFrom, 0, nil, .adopt(prefixBytes: 0)),
    ] as [(DownloadOptions.ExistingFilePolicy, Int64, FileTrust?, ResumeDecision.FinalFile)])
    func aFinalFileIsReportedAdoptedOrReplaced(policy: DownloadOptions.ExistingFilePolicy, existing: Int64,
                                               trust: FileTrust?, expected: ResumeDecision.FinalFile) throws {
        #expect(try ResumeDecision.finalFile(policy: policy, path: Self.final, existingBytes: existing, trust: trust,
                                             remote: Self.remote()) == expected)
    }

    @Test(arguments: [
        ("someone else's file", DownloadOptions.ExistingFilePolicy.refuse, Self.size, FileTrust?.some(.ownedBy(uid: 4242)),
         Self.remote(), DownloadError.Code.outputExists, "\(final) is owned by uid 4242", DownloadError.Remedy.removeStrayFile),
        ("another size", .refuse, 5, .own, Self.remote(), .outputExists,
         "\(final) already exists (5 bytes; the server has 8388608 bytes)", .continueOrOverwrite),
        ("size unknown", .refuse, 5, .own, Self.remote(size: nil), .outputExists,
         "\(final) already exists (5 bytes; the server has an unknown number of bytes)", .continueOrOverwrite),
        ("continue without ranges", .continueFrom, 5, .own, Self.remote(ranges: false), .outputExists,
         "\(final) exists and the server does not serve ranges", .overwrite),
        ("continue past the end", .continueFrom, Self.size + 1, .own, Self.remote(), .outputExists,
         "\(final) (8388609 bytes) is larger than the file on the server (8388608 bytes)", .overwrite),
        ("continue from a link", .continueFrom, 5, .symbolicLink, Self.remote(), .fileSystem(errno: 40),
         "\(final) is a symbolic link, so its bytes are not continued from", .removeStrayFile),
        ("continue from a second name", .continueFrom, 5, .linked(count: 2), Self.remote(), .fileSystem(errno: 31),
         "\(final) has 2 links", .removeStrayFile),
    ] as [(String, DownloadOptions.ExistingFilePolicy, Int64, FileTrust?, RemoteFile, DownloadError.Code, String, DownloadError.Remedy)])
    func aFinalFileThatIsNotThisDownloadIsRefused(_ name: String, policy: DownloadOptions.ExistingFilePolicy, existing: Int64,
                                                  trust: FileTrust?, remote: RemoteFile, code: DownloadError.Code,
                                                  message: String, remedy: DownloadError.Remedy) {
        let error = #expect(throws: DownloadError.self, "\(name)") {
            try ResumeDecision.finalFile(policy: policy, path: Self.final, existingBytes: existing, trust: trust, remote: remote)
        }
        #expect(error?.code == code, "\(name)")
        #expect(error?.message.hasPrefix(message) == true, "\(name): \(error?.message ?? "")")
        #expect(error?.remedy == remedy, "\(name)")
    }
}
