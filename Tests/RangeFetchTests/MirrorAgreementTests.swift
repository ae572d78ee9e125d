import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Mirrors checked beside the main URL's transfer, once per download: silent mirrors do not hold
/// the download up, a metalink's many URLs cost a bounded number of requests, a mirror that agrees
/// late still takes ranges, and a dropped mirror is replaced by a backup. Our fault server and
/// silent listeners on 127.0.0.1.
@Suite(.serialized)
final class MirrorAgreementTests {
    let out: TemporaryDirectory

    init() throws {
        out = try TemporaryDirectory()
    }

    /// The fault server's `link=` parameter naming `targets` as `rel=duplicate`.
    static func duplicates(_ targets: [String]) -> String {
        let value = targets.map { "<\($0)>; rel=duplicate" }.joined(separator: ", ")
        return "link=" + value.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    /// The case: 16 `rel=duplicate` mirrors that accept connections and never answer. 8
    /// are checked (the rest kept as backups), all at once, while the main URL downloads: the
    /// file is done in about the main URL's own time, the checks still hanging are ended and
    /// named. Before, the 8 were checked one after another before the first byte, 5 s each until
    /// the 10 s deadline: over 10 s.
    @Test func sixteenSilentDuplicatesDoNotHoldUpASmallDownload() throws {
        let main = try FaultServer()
        defer { main.stop() }
        let silent = try (0..<16).map { _ in try SilentListener() }
        defer { silent.forEach { $0.close() } }
        let size: Int64 = 3 << 20
        let url = main.dataURL(size: size, "rate=1000000&" + Self.duplicates(silent.map { "http://127.0.0.1:\($0.port)/s.bin" }))
        let clock = ContinuousClock()
        let start = clock.now
        let result = try runCLI([url, "-o", out.file("s.bin"), "-n", "4"], timeoutSeconds: 120)
        let took = clock.now - start
        #expect(result.status == 0, "\(result.stderr)")
        try main.expectFile(out.file("s.bin"), size: size, sourceLocation: #_sourceLocation)
        print("16 silent duplicates, 3 MiB at 4 x 1 MB/s: \(took)")
        #expect(took < .seconds(6), "took \(took) (over 10 s when mirrors were checked before the download)")
        #expect(result.stderr.contains("not checked before the download ended; 7 more mirrors left out too"), "\(result.stderr)")
    }

    /// A metalink of 40 URLs, every one serving the file: the best 8 are used (the main URL and 7
    /// mirrors, each checked with at most 4 samples of 4 KiB), the next 8 are backups never asked
    /// while no mirror drops, the rest are never asked. Before the caps, every URL was probed.
    @Test func aMetalinkWithManyLocationsMakesFewRequests() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let size: Int64 = 24 << 20
        let urls = (0..<40).map { server.dataURL(size: size, name: "many.bin", "rate=3000000&m=\($0)") }
        let meta = out.file("many.meta4")
        // A whole-file digest proves the mirrors' bytes: no spot checks go to the main URL after the run.
        let whole = MetalinkDownloadTests.digests(of: try server.expectedBytes(size: size)).whole
        try MetalinkDownloadTests.metalink(name: "many.bin", size: size, sha256: whole, urls: urls)
            .write(toFile: meta, atomically: true, encoding: .utf8)
        let result = try runCLI([meta, "-o", out.file("many.bin"), "-n", "4", "--min-segment", "1M"])
        #expect(result.status == 0, "\(result.stderr)")
        try server.expectFile(out.file("many.bin"), size: size, sourceLocation: #_sourceLocation)
        let log = try server.stats().log.filter { $0.path.hasSuffix("many.bin") }
        let asked = Set(log.compactMap { entry in entry.query.split(separator: "&").first { $0.hasPrefix("m=") }.flatMap { Int($0.dropFirst(2)) } })
        #expect(asked.isSubset(of: Set(0..<8)), "asked \(asked.sorted())")
        for mirror in 1..<8 {
            let samples = log.filter { $0.query.hasSuffix("m=\(mirror)") && $0.bytes <= 4096 }
            #expect(samples.count <= 4, "mirror \(mirror): \(samples.count) small requests")
        }
        let references = log.filter { $0.query.hasSuffix("m=0") && $0.range != nil && $0.bytes <= 4096 }
        #expect(references.count <= 4, "\(references.count) small ranges of the main URL: the reference is fetched once")
        let mirrorData = log.filter { !$0.query.hasSuffix("m=0") && $0.bytes > 4096 }
        #expect(!mirrorData.isEmpty, "no mirror carried a range: the test proves nothing")
    }

    /// A mirror whose first sample stalls 3 s agrees only after the main URL has started: its
    /// check runs beside the transfer (the first bytes arrive at once, not after the mirror), and
    /// once agreed it still takes ranges of the running download.
    @Test func aMirrorThatAgreesLateStillTakesRanges() async throws {
        let main = try FaultServer()
        let late = try FaultServer()
        defer { main.stop(); late.stop() }
        let size: Int64 = 24 << 20
        var options = DownloadOptions()
        options.destination = .file(out.file("l.bin"))
        options.connections = .fixed(4)
        options.minimumSegmentBytes = 1 << 20
        options.mirrors = [late.dataURL(size: size, "stall=3&stallafter=0&stallcount=1")]
        let clock = ContinuousClock()
        let start = clock.now
        let firstBytes = Locked<Duration?>(nil)
        _ = try await Downloader(options: options).download(main.dataURL(size: size, "rate=1000000")) { event in
            if case .progress(let progress) = event, progress.receivedBytes > 0 {
                firstBytes.withLock { if $0 == nil { $0 = clock.now - start } }
            }
        }
        try main.expectFile(out.file("l.bin"), size: size, sourceLocation: #_sourceLocation)
        let first = try #require(firstBytes.current)
        print("first bytes after \(first); the mirror agreed after 3 s")
        #expect(first < .milliseconds(2500), "first bytes after \(first): the download waited for the mirror")
        let data = try late.stats().log.filter { $0.range != nil && $0.bytes > 4096 }
        #expect(!data.isEmpty, "the late mirror carried no range")
    }

    /// An agreed mirror that fails every range (closes after 64 KiB) is dropped; the backup is
    /// then checked and takes ranges in its place; the file is exact.
    @Test func aDroppedMirrorIsReplacedByABackup() async throws {
        let main = try FaultServer()
        let failing = try FaultServer()
        let backup = try FaultServer()
        defer { main.stop(); failing.stop(); backup.stop() }
        let size: Int64 = 24 << 20
        var options = DownloadOptions()
        options.destination = .file(out.file("b.bin"))
        options.connections = .fixed(6)
        options.minimumSegmentBytes = 1 << 20
        options.mirrors = [failing.dataURL(size: size, "cut=65536")]
        options.backupMirrors = [backup.dataURL(size: size)]
        options.retry = RetryPolicy(maximumTries: 5, baseDelaySeconds: 0.05)
        let said = Locked<[String]>([])
        _ = try await Downloader(options: options).download(main.dataURL(size: size, "rate=1500000")) { event in
            if case .warning(let warning) = event { said.withLock { $0.append(warning.message) } }
        }
        try main.expectFile(out.file("b.bin"), size: size, sourceLocation: #_sourceLocation)
        let messages = said.current
        #expect(messages.contains { $0.contains("cut=65536 dropped") }, "\(messages)")
        let log = try backup.stats().log.filter { $0.range != nil }
        #expect(log.contains { $0.bytes > 4096 }, "the backup carried no range: \(log.map(\.bytes)); \(messages)")
    }
}
