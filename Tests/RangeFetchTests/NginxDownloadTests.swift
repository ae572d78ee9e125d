import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Happy paths against a real nginx on 127.0.0.1.
@Suite(.serialized)
final class NginxDownloadTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    private func download(_ path: String, to name: String, connections: Int = 8,
                          configure: (inout DownloadOptions) -> Void = { _ in },
                          events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }) async throws -> DownloadSummary {
        var options = DownloadOptions()
        options.destination = .file(out.file(name))
        options.connections = .fixed(connections)
        configure(&options)
        return try await Downloader(options: options).download(nginx.baseURL + path, events: events)
    }

    static let smallSizes: [Int64] = [0, 1, (1 << 20) + 1]

    @Test(arguments: smallSizes)
    func downloadsSmallFilesExactly(size: Int64) async throws {
        let source = try www.randomFile("f\(size).bin", size: size)
        let summary = try await download("/f\(size).bin", to: "f.bin")
        #expect(summary.bytes == size)
        #expect(try Checksums.sha256sum(out.file("f.bin")) == Checksums.sha256sum(source))
        #expect(!out.exists("f.bin.part"))
        #expect(!out.exists("f.bin.part.rfjournal"))
    }

    @Test func downloads200MiBWithSixteenConnectionsByteForByte() async throws {
        let size: Int64 = 200 << 20
        let source = try www.randomFile("big.bin", size: size)
        let summary = try await download("/big.bin", to: "big.bin", connections: 16)
        #expect(summary.segmented)
        #expect(summary.bytes == size)
        #expect(try Checksums.sha256sum(out.file("big.bin")) == Checksums.sha256sum(source))
        let gets = nginx.accessLog().filter { $0.method == "GET" && $0.path == "/big.bin" }
        // 16 planned ranges, plus any stolen halves; never a whole-file answer.
        #expect(gets.filter { $0.status == 206 }.count >= 16)
        #expect(gets.allSatisfy { $0.status == 206 && $0.range.hasPrefix("bytes=") })
        #expect(gets.map(\.bytes).reduce(0, +) >= size)
    }

    @Test func serverWithRangesDisabledGetsOneStream() async throws {
        let source = try www.randomFile("nr.bin", size: 3 << 20)
        let summary = try await download("/norange/nr.bin", to: "nr.bin")
        #expect(!summary.segmented)
        #expect(try Checksums.sha256sum(out.file("nr.bin")) == Checksums.sha256sum(source))
        let gets = nginx.accessLog().filter { $0.method == "GET" }
        #expect(gets.count == 1)
        #expect(gets.first?.status == 200)
    }

    @Test func missingFileIsAnHTTPErrorAndLeavesNothing() async throws {
        let error = await expectDownloadError { try await self.download("/nothere.bin", to: "nothere.bin") }
        #expect(error?.category == .network)
        #expect(error?.httpStatus == 404)
        #expect(error?.message.contains("404") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
    }

    @Test func followsRedirectsAndFetchesRangesFromTheFinalURL() async throws {
        let source = try www.randomFile("moved.bin", size: 4 << 20)
        let probed = Locked<RemoteFile?>(nil)
        var options = DownloadOptions()
        options.destination = .directory(out.path)
        options.connections = 4
        let summary = try await Downloader(options: options).download(nginx.baseURL + "/redirect/moved.bin") { event in
            if case .probed(let remote) = event { probed.withLock { $0 = remote } }
        }
        #expect(summary.path == out.file("moved.bin"))
        #expect(probed.current?.redirectedTo == nginx.baseURL + "/moved.bin")
        #expect(try Checksums.sha256sum(summary.path) == Checksums.sha256sum(source))
        let ranged = nginx.accessLog().filter { $0.status == 206 }
        #expect(ranged.count >= 4)
        #expect(ranged.allSatisfy { $0.path == "/moved.bin" })
    }

    @Test func checksumMatchLetsTheFileIntoPlace() async throws {
        let source = try www.randomFile("sum.bin", size: 5 << 20)
        let expected = try DigestValue(algorithm: .sha256, hex: Checksums.sha256sum(source))!
        let md5 = try DigestValue(algorithm: .md5, hex: Checksums.md5sum(source))!
        let summary = try await download("/sum.bin", to: "sum.bin") { $0.checksums = [expected, md5] }
        #expect(summary.verified.contains(expected))
        #expect(summary.verified.contains(md5))
    }

    @Test func checksumMismatchLeavesNothingAtTheFinalPath() async throws {
        try www.randomFile("bad.bin", size: 2 << 20)
        let wrong = DigestValue(algorithm: .sha256, bytes: [UInt8](repeating: 0xAB, count: 32))
        let error = await expectDownloadError { try await self.download("/bad.bin", to: "bad.bin") { $0.checksums = [wrong] } }
        #expect(error?.category == .checksum)
        #expect(error?.message.contains(wrong.hex) == true)
        #expect(!out.exists("bad.bin"))
        #expect(out.exists("bad.bin.checksum-mismatch"))
        #expect(!out.exists("bad.bin.part.rfjournal"))
    }

    /// Connections older than the lifetime (1 s here) get no new range; with recycling off, or
    /// after losses only (loopback loses none), the same connections serve every range.
    @Test(arguments: [DownloadOptions.ConnectionRecycling.always, .never, .afterLoss])
    func connectionsAreReplacedAtARangeBoundaryOnceOlderThanTheirLifetime(recycle: DownloadOptions.ConnectionRecycling) async throws {
        let size: Int64 = 64 << 20
        let source = try www.randomFile("slow.bin", size: size)
        // nginx sends each request at about 4 MiB/s: 5 s or more in ranges of 1–2 s, so each
        // connection is replaced once or twice (libcurl counts a connection's age in whole
        // seconds: "older than 1 s" means 2 s or more).
        let ended = Locked<[RequestEnd]>([])
        let summary = try await download("/slow/slow.bin", to: "slow.bin", connections: 2,
                                         configure: { $0.recycleConnections = recycle },
                                         events: { event in
                                             if case .requestEnded(let end) = event { ended.withLock { $0.append(end) } }
                                         })
        #expect(summary.bytes == size)
        #expect(try Checksums.sha256sum(out.file("slow.bin")) == Checksums.sha256sum(source))
        let ranges = nginx.accessLog().filter { $0.method == "GET" && !$0.range.isEmpty }
        #expect(ranges.count > 4, "\(ranges.count) ranges")
        let connections = Set(ranges.map(\.connection)).count
        if recycle == .always {
            #expect(connections >= 4, "\(connections) connections for \(ranges.count) ranges: \(ranges.map { "\($0.range) \($0.connection)" })")
        } else {
            // The two of the plan, and one more for each request that ended early: a stolen
            // tail or a takeover (a connection that fell behind, which a loaded machine makes
            // happen) ends its request by closing the connection. None is replaced for its age.
            let cut = ended.current.filter { $0.failure != nil || $0.bytes < ($0.range?.count ?? 0) }.count
            // On a loaded machine even loopback delivers packets out of order now and then (the
            // sender moves between CPUs); .afterLoss then rightly starts replacing connections.
            let reordered = ended.current.contains { $0.packetsOutOfOrder == true }
            if recycle == .afterLoss && reordered { return }
            #expect(connections <= 2 + cut, "\(connections) connections, \(cut) requests cut, for \(ranges.count) ranges: \(ranges.map { "\($0.range) \($0.connection)" })")
        }
    }
}

/// What an embedder of the library meets: the event stream under cancellation.
@Suite(.serialized)
final class EmbedderTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    /// Cancelling the task that iterates `events(for:)` ends the loop by throwing `.interrupted`
    /// (not as if it succeeded), and only once the partial file is let go: the same file can be
    /// started again at once, in the same process, and resumes.
    @Test func cancellingTheIteratingTaskThrowsAndReleasesTheFile() async throws {
        let source = try www.randomFile("c.bin", size: 32 << 20)
        var options = DownloadOptions()
        options.destination = .file(out.file("c.bin"))
        options.connections = .fixed(2)
        let downloader = Downloader(options: options)
        let url = nginx.baseURL + "/slow/c.bin"
        // The iterating task is cancelled from within, as soon as it sees 2 MiB: cancelled from
        // another task, the cancel waited for that task to be scheduled too, and under load the
        // 32 MiB at 8 MB/s once finished first.
        let consumer = Task { () async -> Result<Int, any Error> in
            var events = 0
            do {
                for try await event in downloader.events(for: url) {
                    events += 1
                    if case .progress(let progress) = event, progress.receivedBytes >= 2 << 20 {
                        withUnsafeCurrentTask { $0?.cancel() }
                    }
                }
                return .success(events)
            } catch {
                return .failure(error)
            }
        }
        switch await consumer.value {
        case .success(let count):
            Issue.record("the loop ended without an error after \(count) events, as if it had succeeded")
        case .failure(let error):
            #expect((error as? DownloadError)?.category == .interrupted, "\(error)")
        }
        let journal = (try? String(contentsOfFile: out.file("c.bin.part.rfjournal"), encoding: .utf8)) ?? "none"
        let warnings = WarningLog()
        let summary = try await downloader.download(url) { if case .warning(let warning) = $0 { warnings.add(warning.message) } }
        #expect(summary.resumedBytes > 0, "\(warnings.all) journal: \(journal.suffix(400))")
        #expect(try Checksums.sha256sum(out.file("c.bin")) == Checksums.sha256sum(source))
    }
}

extension EmbedderTests {
    /// The library says what happened and which remedy applies; the words of the remedy (flags
    /// such as --overwrite, "rerun the same command") are the command line's.
    @Test func libraryErrorsDescribeTheSituationAndNameARemedyWithoutCLIAdvice() async throws {
        try www.randomFile("e.bin", size: 100_000)
        try Data("other".utf8).write(to: URL(fileURLWithPath: out.file("e.bin")))
        var options = DownloadOptions()
        options.destination = .file(out.file("e.bin"))
        do {
            _ = try await Downloader(options: options).download(nginx.baseURL + "/e.bin")
            Issue.record("an existing file was replaced without --overwrite")
        } catch {
            #expect(error.remedy == .continueOrOverwrite)
            #expect(!error.message.contains("--"), "\(error.message)")
        }
        options.destination = .file(out.path)
        do {
            _ = try await Downloader(options: options).download(nginx.baseURL + "/e.bin")
            Issue.record("downloaded onto a directory")
        } catch {
            #expect(error.remedy == .downloadIntoDirectory && !error.message.contains("-d"), "\(error.message)")
        }
        // The CLI adds the words.
        let cli = try runCLI([nginx.baseURL + "/e.bin", "-o", out.file("e.bin")])
        #expect(cli.stderr.contains("use --continue to resume from its bytes or --overwrite to replace it"), "\(cli.stderr)")
    }
}

extension EmbedderTests {
    @Test func aFoundationURLIsAcceptedWhereAStringIs() async throws {
        let source = try www.randomFile("u.bin", size: 300_000)
        var options = DownloadOptions()
        options.destination = .directory(out.path)
        let summary = try await Downloader(options: options).download(URL(string: nginx.baseURL + "/u.bin")!)
        #expect(summary.path == out.file("u.bin"))
        #expect(try Checksums.sha256sum(out.file("u.bin")) == Checksums.sha256sum(source))
    }
}

final class WarningLog: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [String] = []
    func add(_ message: String) { lock.withLock { messages.append(message) } }
    var all: [String] { lock.withLock { messages } }
}
