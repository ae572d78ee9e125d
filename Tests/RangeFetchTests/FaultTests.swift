import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Hostile servers: every case ends byte-exact or with a clean error and nothing at the final path.
@Suite(.serialized)
final class FaultTests {
    let server: FaultServer
    let out: TemporaryDirectory
    static let size: Int64 = 8 << 20

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-fault")
    }

    deinit { server.stop() }

    var target: String { out.file("out.bin") }

    private func download(_ url: String, connections: Int = 4, configure: (inout DownloadOptions) -> Void = { _ in },
                          events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }) async throws -> DownloadSummary {
        var options = DownloadOptions()
        options.destination = .file(target)
        options.connections = .fixed(connections)
        options.minimumSegmentBytes = 256 << 10
        options.retry = RetryPolicy(maximumTries: 5, baseDelaySeconds: 0.05)
        configure(&options)
        return try await Downloader(options: options).download(url, events: events)
    }

    private func expectExactFile(version: Int = 0, size: Int64 = FaultTests.size,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        try server.expectFile(target, size: size, version: version, sourceLocation: sourceLocation)
    }

    private func expectNothingAtFinalPath(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!FileManager.default.fileExists(atPath: target), "a file was left at the final path", sourceLocation: sourceLocation)
    }

    // MARK: Connections that fail

    static let cutModes = ["fin", "rst"]

    @Test func everyResponseCutShortStillFinishesWhileEachTryMakesProgress() async throws {
        // Each try brings 100 kB that land in the file a moment after the connection drops:
        // bytes still queued for writing are progress, so two tries per range never run out.
        _ = try await download(server.dataURL(size: 3 << 20, "cut=100000"), connections: 2, configure: {
            $0.retry = RetryPolicy(maximumTries: 2, baseDelaySeconds: 0)
        })
        try expectExactFile(size: 3 << 20)
    }

    /// `--continue` against a server whose ranges come back wrong: the existing file's bytes
    /// cannot be checked, so they are not taken; the error says so and the file is unchanged.
    @Test func continuingAgainstWrongRangesIsRefusedWithTheFileUnchanged() async throws {
        let prefix = try server.expectedBytes(size: Self.size).prefix(1 << 20)
        try prefix.write(to: URL(fileURLWithPath: target))
        let error = await expectDownloadError {
            try await self.download(self.server.dataURL(size: Self.size, "wrongrange=1"), configure: { $0.existingFile = .continueFrom })
        }
        #expect(error?.message.contains("did not answer bytes") == true && error?.remedy == .overwrite, "\(String(describing: error))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == prefix)
        #expect(!FileManager.default.fileExists(atPath: target + ".part"))
    }

    /// A server that closes every response after 100 bytes: each try "progresses", but by too
    /// little to count, so the download gives up after its tries with an error saying so, rather
    /// than asking again for ever (3,779 requests in 60 s before).
    @Test func everyResponseCutAfterAFewBytesGivesUpAfterItsTries() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let error = await expectDownloadError {
            try await self.download(self.server.dataURL(size: Self.size, "cut=100"), configure: {
                $0.retry = RetryPolicy(maximumTries: 5, baseDelaySeconds: 0.01)
            })
        }
        #expect(error?.message.contains("gave up after 5 tries") == true, "\(String(describing: error))")
        #expect(error?.message.contains("ends every response early") == true, "\(String(describing: error))")
        #expect(clock.now - start < .seconds(60))
        // Bounded by the plan's pieces (about four per connection) times the tries, with room
        // for splits: about 100 here, where it was unbounded.
        let requests = try server.stats().log.filter { $0.method == "GET" }.count
        #expect(requests <= 200, "\(requests) requests")
        expectNothingAtFinalPath()
    }

    @Test(arguments: cutModes)
    func droppedConnectionsAreRetriedFromTheLastByteWritten(mode: String) async throws {
        let retries = Locked(0)
        let ended = Locked<[RequestEnd]>([])
        // Four ranges that are never split (no stealing), so every byte served is accounted for.
        _ = try await download(server.dataURL(size: Self.size, "cut=1000000&cutmode=\(mode)&cutcount=4"),
                               configure: { $0.minimumSegmentBytes = Self.size / 4 }, events: { event in
            if case .retrying = event { retries.withLock { $0 += 1 } }
            if case .requestEnded(let end) = event { ended.withLock { $0.append(end) } }
        })
        try expectExactFile()
        #expect(retries.current >= 1)
        // Retries continue, they do not restart: a range is asked for from its first byte once,
        // and again only after a request that delivered nothing (a reset discards what the
        // kernel had not yet handed over, all of it when a loaded machine reads late; a
        // connection replaced before its first byte).
        let requests = try server.stats().log.filter { $0.method == "GET" && $0.path.hasSuffix("/data.bin") }
        let planStarts = Set((0..<4).map { Self.size / 4 * Int64($0) })
        let fromPlanStart = requests.filter { entry in
            guard let start = entry.range?.dropFirst("bytes=".count).split(separator: "-").first.flatMap({ Int64($0) }) else { return false }
            return planStarts.contains(start)
        }.count
        let emptyTries = ended.current.filter { $0.bytes == 0 }.count
        #expect(fromPlanStart <= 4 + emptyTries, "\(fromPlanStart) requests from a range's first byte, \(emptyTries) empty tries: \(requests.map { "\($0.range ?? "-") \($0.bytes)" })")
        // On an idle machine little more than the file crosses the wire (a bound a loaded one can
        // break through takeovers of connections that only looked slow).
        let served = requests.map(\.bytes).reduce(0, +)
        #expect(served <= 2 * Self.size, "served \(served)")
    }

    @Test func serviceUnavailableHonoursRetryAfter() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await download(server.dataURL(size: Self.size, "status503=2&retryafter=1"), connections: 2)
        try expectExactFile()
        #expect(clock.now - start >= .seconds(1))
    }

    @Test func deadServerEndsQuicklyWithAClearError() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let error = await expectDownloadError {
            try await self.download(self.server.dataURL(size: Self.size, "cut=0&cutmode=rst"))
        }
        #expect(error?.category == .network)
        #expect(clock.now - start < .seconds(20))
        expectNothingAtFinalPath()
    }

    @Test func clientErrorsAreNotRetried() async throws {
        let error = await expectDownloadError {
            try await self.download(self.server.dataURL(size: Self.size, "status=404&statuscount=100"))
        }
        #expect(error?.httpStatus == 404)
        #expect(try server.stats().requests <= 3)
    }

    @Test func stalledConnectionIsReplacedNotJustDropped() async throws {
        _ = try await download(server.dataURL(size: Self.size, "stall=30&stalloffset=\(Self.size / 2)&stallcount=1"),
                               connections: 4) { $0.request.stallTimeoutSeconds = 3 }
        try expectExactFile()
    }

    @Test func tricklingConnectionCostsLittleExtraTime() async throws {
        // Every connection is capped at 1 MB/s (like a CDN), so a clean run takes seconds.
        let size: Int64 = 48 << 20
        let clock = ContinuousClock()
        var start = clock.now
        _ = try await download(server.dataURL(size: size, name: "clean.bin", "rate=1000000"), connections: 8)
        let clean = clock.now - start
        try FileManager.default.removeItem(atPath: target)
        start = clock.now
        let replaced = Locked(false)
        _ = try await download(server.dataURL(size: size, name: "slow.bin", "rate=1000000&trickle=10000&trickleoffset=\(size / 3)&tricklecount=1"),
                               connections: 8, events: { event in
            if case .warning(.slowConnectionReplaced) = event { replaced.withLock { $0 = true } }
        })
        let slow = clock.now - start
        try expectExactFile(size: size)
        #expect(replaced.current)
        print("trickle: clean \(clean), with one 10 KB/s connection \(slow)")
        #expect(slow < clean * 1.5, "clean \(clean), trickling \(slow)")
    }

    // MARK: Servers that lie

    @Test func shiftedBytesUnderACorrectContentRangeAreCaughtByTheDigest() async throws {
        // A server that lies consistently (right headers, wrong bytes) is only caught by a digest;
        // its last range also comes up 7 bytes short, which stalls until the timeout.
        let digest = Digest(.sha256)
        digest.update(Array(try server.expectedBytes(size: Self.size)))
        let expected = digest.finalize()
        let error = await expectDownloadError {
            try await self.download(self.server.dataURL(size: Self.size, "shift=7")) {
                $0.checksums = [expected]
                $0.request.stallTimeoutSeconds = 1
                $0.retry = RetryPolicy(maximumTries: 2, baseDelaySeconds: 0.05)
            }
        }
        #expect(error?.category == .network || error?.category == .checksum)
        expectNothingAtFinalPath()
    }

    /// A 206 of other bytes than asked, or a 416 refusing a range inside the size the server
    /// announced: ranges from it cannot be trusted, so the file comes as one plain stream (as
    /// curl and aria2c fetch it), with one warning; no byte of a wrong answer is written.
    @Test(arguments: ["wrongrange=1", "rangeunsatisfied=1"])
    func rangesAnsweredWronglyFallBackToOneStream(fault: String) async throws {
        let warnings = Locked<[DownloadWarning]>([])
        let summary = try await download(server.dataURL(size: Self.size, fault), events: { event in
            if case .warning(let warning) = event { warnings.withLock { $0.append(warning) } }
        })
        try expectExactFile()
        #expect(!summary.segmented)
        let abandoned = warnings.withLock { $0 }.filter { if case .rangesAbandoned = $0 { true } else { false } }
        #expect(abandoned.count == 1, "\(warnings.withLock { $0 })")
        let reason = abandoned.first.map { "\($0)" } ?? ""
        #expect(reason.contains(fault == "wrongrange=1" ? "Content-Range" : "416"), "\(reason)")
    }

    @Test func contentThatChangesMidDownloadIsNeverMixed() async throws {
        // One response is cut after the content changed, so its retry must meet the new version
        // (without the cut, every range may be asked for before the change and all is well).
        // The download starts over and ends with the new version, whole.
        _ = try await download(server.dataURL(size: Self.size, "changeafter=1000000&cut=1500000&cutcount=1"))
        try expectExactFile(version: 1)
    }

    @Test func overlongBodyIsCutAndFlagged() async throws {
        let warned = Locked(false)
        _ = try await download(server.dataURL(size: Self.size, "extra=100"), events: { event in
            if case .warning(.overlongResponse) = event { warned.withLock { $0 = true } }
        })
        try expectExactFile()
        #expect(warned.current)
    }

    @Test func rangesAskForIdentityEncoding() async throws {
        // The server would gzip for clients that accept it; ranged requests ask for identity.
        let summary = try await download(server.dataURL(size: Self.size, "encoding=gzip"))
        #expect(summary.segmented)
        try expectExactFile()
    }

    @Test func encodedRepresentationIsNeverFetchedAsRanges() async throws {
        // Ranges of a gzip body are not ranges of the file: one plain stream, decoded as it lands.
        // (The server really gzips; a body that only claims gzip is an error: EncodingTests.)
        let summary = try await download(server.dataURL(size: Self.size, "encoding=gzip&realgzip=1&forceencoding=1"))
        #expect(!summary.segmented)
        #expect(try server.stats().log.allSatisfy { $0.status != 206 })
        try expectExactFile()
    }

    // MARK: Servers without ranges or length

    @Test func chunkedWithoutLengthIsOneSafeStream() async throws {
        let summary = try await download(server.dataURL(size: Self.size, "chunked=1"))
        #expect(!summary.segmented)
        try expectExactFile()
    }

    @Test func brokenSingleStreamRestartsFromZeroSafely() async throws {
        // No length and no ranges: a cut stream cannot continue, so the retry starts over.
        let summary = try await download(server.dataURL(size: Self.size, "chunked=1&cut=3000000&cutcount=1"))
        #expect(!summary.segmented)
        try expectExactFile()
    }

    @Test func serverThatVanishesMidRunLeavesAResumablePartial() async throws {
        let url = server.dataURL(size: Self.size, "rate=1000000")
        let started = Locked(false)
        var options = DownloadOptions()
        options.destination = .file(target)
        options.connections = 4
        options.retry = RetryPolicy(maximumTries: 2, baseDelaySeconds: 0.05)
        let downloader = Downloader(options: options)
        let task = Task {
            try await downloader.download(url) { event in
                if case .progress(let progress) = event, progress.receivedBytes > 1 << 20 { started.withLock { $0 = true } }
            }
        }
        while !started.current { try await Task.sleep(for: .milliseconds(20)) }
        server.stop()
        let error = await expectDownloadError { try await task.value }
        #expect(error?.category == .network)
        expectNothingAtFinalPath()
        #expect(FileManager.default.fileExists(atPath: target + ".part"))
        #expect(FileManager.default.fileExists(atPath: target + ".part.rfjournal"))
    }

    @Test func serverIgnoringRangeFallsBackToOneStream() async throws {
        let summary = try await download(server.dataURL(size: Self.size, "norange=1"))
        #expect(!summary.segmented)
        try expectExactFile()
    }

    @Test func rangesWithoutAcceptRangesHeaderStillWorkAsOneStream() async throws {
        _ = try await download(server.dataURL(size: Self.size, "noaccept=1"))
        try expectExactFile()
    }

    @Test func refusedHeadFallsBackToAFirstByteProbe() async throws {
        let summary = try await download(server.dataURL(size: Self.size, "nohead=1"))
        #expect(summary.segmented)
        try expectExactFile()
        #expect(try server.stats().log.contains { $0.method == "GET" && $0.range == "bytes=0-0" })
    }

    // MARK: Requests users need

    @Test func redirectChainsAreFollowedWithinBounds() async throws {
        _ = try await download(server.dataURL(size: Self.size, "redirect=3"))
        try expectExactFile()
        try FileManager.default.removeItem(atPath: target)
        let error = await expectDownloadError { try await self.download(self.server.dataURL(size: Self.size, "redirect=30")) }
        #expect(error?.message.contains("redirect") == true)
    }

    @Test func basicAuthFromOptionsAndFromTheURL() async throws {
        let url = server.dataURL(size: Self.size, "auth=alice:s3cret")
        let refused = await expectDownloadError { try await self.download(url) }
        #expect(refused?.httpStatus == 401)
        _ = try await download(url) { $0.request.credentials = "alice:s3cret" }
        try expectExactFile()
        try FileManager.default.removeItem(atPath: target)
        _ = try await download(url.replacingOccurrences(of: "http://", with: "http://alice:s3cret@"))
        try expectExactFile()
    }

    @Test func credentialsAreNotSentToAnotherHostAfterARedirect() async throws {
        // 127.0.0.1 redirects to localhost: libcurl must not hand the password to the new host.
        let url = server.dataURL(size: Self.size, "auth=alice:s3cret&redirect=1&redirecthost=1")
        let error = await expectDownloadError { try await self.download(url) { $0.request.credentials = "alice:s3cret" } }
        #expect(error?.httpStatus == 401)
        expectNothingAtFinalPath()
    }

    @Test func extraHeadersAreSentWithEveryRequest() async throws {
        // The server demands Basic auth; supplying it as a raw header must work for probe and ranges.
        let url = server.dataURL(size: Self.size, "auth=bob:pw")
        let token = Data("bob:pw".utf8).base64EncodedString()
        _ = try await download(url) { $0.request.headers = ["Authorization: Basic \(token)"] }
        try expectExactFile()
    }

    @Test func contentDispositionNamesTheFileSafelyWhenTrusted() async throws {
        var options = DownloadOptions()
        options.destination = .directory(out.path)
        options.nameSource = .server
        let summary = try await Downloader(options: options).download(server.dataURL(size: 1000, "disposition=../../evil.bin"))
        #expect(summary.path == out.file("evil.bin"))
    }

    @Test func advertisedDigestIsVerified() async throws {
        let verified = Locked<[String]>([])
        _ = try await download(server.dataURL(size: Self.size, "reprdigest=good"), events: { event in
            if case .verified(_, let source) = event { verified.withLock { $0.append(source) } }
        })
        try expectExactFile()
        #expect(verified.current.contains { $0.contains("Repr-Digest") })
        try FileManager.default.removeItem(atPath: target)
        let error = await expectDownloadError { try await self.download(self.server.dataURL(size: Self.size, "reprdigest=bad")) }
        #expect(error?.category == .checksum)
        expectNothingAtFinalPath()
    }

    @Test func resumeSendsIfRangeAndSurvivesAChangedFile() async throws {
        // First run dies at the server's hands (every request cut), leaving a journal.
        // First run: all four ranges are cut and retries are off, leaving a partial and a journal.
        let url = server.dataURL(size: Self.size, "cut=500000&cutcount=4")
        _ = await expectDownloadError { try await self.download(url) { $0.retry = RetryPolicy(maximumTries: 1) } }
        #expect(FileManager.default.fileExists(atPath: target + ".part.rfjournal"))
        // The resumed run also verifies: the prefix already on disk is hashed first.
        let digest = Digest(.sha256)
        digest.update(Array(try server.expectedBytes(size: Self.size)))
        let expected = digest.finalize()
        let resumed = try await download(url) { $0.checksums = [expected] }
        #expect(resumed.resumedBytes > 0)
        #expect(resumed.verified == [expected])
        try expectExactFile()
        let ranged = try server.stats().log.filter { $0.method == "GET" && $0.range != nil }
        #expect(!ranged.isEmpty)
        #expect(ranged.allSatisfy { $0.if_range == "\"\(Self.size)-0\"" })
    }
}
