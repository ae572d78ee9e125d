import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// One file from several sources: nginx instances on other ports for mirrors that agree, our
/// fault server for mirrors that serve other bytes, fail or crawl.
@Suite(.serialized)
final class MirrorTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer
    let mirror: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
        mirror = try NginxServer(docroot: www.path)
    }

    deinit { mirror.stop() }

    private func ranged(_ server: NginxServer, _ path: String) -> [NginxServer.LogEntry] {
        server.accessLog().filter { $0.path == path && $0.status == 206 && $0.bytes > 4096 }
    }

    /// Mirrors that accept the connection and never answer hold the download up for a bounded
    /// time (each request 5 s, all of them 10 s), not 30 s each: the file comes from the main URL.
    @Test func silentMirrorsHoldTheDownloadUpBriefly() throws {
        let source = try www.randomFile("s.bin", size: 3 << 20)
        let silent = try (0..<4).map { _ in try SilentListener() }
        defer { silent.forEach { $0.close() } }
        var arguments = [nginx.baseURL + "/s.bin", "-o", out.file("s.bin"), "-n", "4"]
        for listener in silent { arguments += ["--mirror", "http://127.0.0.1:\(listener.port)/s.bin"] }
        let clock = ContinuousClock()
        let start = clock.now
        let result = try runCLI(arguments, timeoutSeconds: 120)
        let took = clock.now - start
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(out.file("s.bin")) == Checksums.sha256sum(source))
        #expect(took < .seconds(30), "took \(took) (4 x 30 s before)")
        #expect(result.stderr.contains("mirrors left out too") || result.stderr.components(separatedBy: "left out").count >= 3,
                "\(result.stderr)")
    }

    /// Both sources carry ranges (each capped per request by nginx's limit_rate), each under the
    /// per-host limit, and the file is exact; the same through an -i line of TAB-separated URLs.
    @Test func twoMirrorsShareTheRangesUnderThePerHostLimit() throws {
        let source = try www.randomFile("m.bin", size: 24 << 20)
        let result = try runCLI([nginx.baseURL + "/slow/m.bin", "--mirror", mirror.baseURL + "/slow/m.bin", "-o", out.file("m.bin"),
                                 "--max-connections-per-host", "3", "-n", "6", "--min-segment", "1M"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(out.file("m.bin")) == Checksums.sha256sum(source))
        #expect(ranged(nginx, "/slow/m.bin").count >= 2 && ranged(mirror, "/slow/m.bin").count >= 2,
                "main \(ranged(nginx, "/slow/m.bin").count), mirror \(ranged(mirror, "/slow/m.bin").count) data ranges")
        try nginx.clearAccessLog()
        try mirror.clearAccessLog()
        let list = out.file("list.txt")
        try "\(nginx.baseURL)/slow/m.bin\t\(mirror.baseURL)/slow/m.bin\n  out=l.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let batch = try runCLI(["-i", list, "-d", out.path, "--max-connections-per-host", "3"])
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(try Checksums.sha256sum(out.file("l.bin")) == Checksums.sha256sum(source))
        #expect(ranged(nginx, "/slow/m.bin").count >= 2 && ranged(mirror, "/slow/m.bin").count >= 2)
    }

    /// The per-host limit counts each source's connections: two sources at 3 each, 6 in all.
    @Test func eachSourceStaysWithinThePerHostLimit() throws {
        let main = try FaultServer()
        let second = try FaultServer()
        defer { main.stop(); second.stop() }
        let size: Int64 = 24 << 20
        let result = try runCLI([main.dataURL(size: size, "rate=6000000"), "--mirror", second.dataURL(size: size, "rate=6000000"),
                                 "-o", out.file("p.bin"), "--max-connections-per-host", "3", "-n", "6", "--min-segment", "1M"])
        #expect(result.status == 0, "\(result.stderr)")
        try main.expectFile(out.file("p.bin"), size: size, sourceLocation: #_sourceLocation)
        // The stats request's own connection is one of those counted.
        let (peakMain, peakSecond) = (try main.stats().peak_connections, try second.stats().peak_connections)
        #expect(peakMain <= 4 && peakSecond <= 4, "peaks \(peakMain) and \(peakSecond) with a limit of 3 per host")
        #expect(peakMain >= 3 && peakSecond >= 3, "peaks \(peakMain) and \(peakSecond): a source was not used")
    }

    /// Without --max-connections-per-host a single source gets every connection -n asks for
    /// (the per-host limit is a batch's, and each mirror's when given).
    @Test func oneSourceGetsEveryConnectionNAsksFor() throws {
        let main = try FaultServer()
        defer { main.stop() }
        let size: Int64 = 40 << 20
        let result = try runCLI([main.dataURL(size: size, "rate=2000000"), "-o", out.file("n.bin"), "-n", "20",
                                 "--min-segment", "1M"])
        #expect(result.status == 0, "\(result.stderr)")
        let peak = try main.stats().peak_connections
        #expect(peak >= 18, "\(peak) connections at most with -n 20")
    }

    /// A mirror with other bytes of the same size is never mixed in: left out after the sampled
    /// comparison, and named.
    @Test func aMirrorServingOtherBytesOfTheSameSizeIsLeftOut() throws {
        let main = try FaultServer()
        let other = try FaultServer()
        defer { main.stop(); other.stop() }
        let size: Int64 = 16 << 20
        let result = try runCLI([main.dataURL(size: size), "--mirror", other.dataURL(size: size, "version=1"),
                                 "-o", out.file("o.bin"), "-n", "8"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("mirror \(other.baseURL)") && result.stderr.contains("serves other bytes"), "\(result.stderr)")
        try main.expectFile(out.file("o.bin"), size: size, sourceLocation: #_sourceLocation)
        // Only the probe and the 4 KiB samples went to it.
        let log = try other.stats().log.filter { $0.range != nil }
        #expect(log.allSatisfy { $0.bytes <= 4096 } && log.count <= 4, "\(log.map(\.bytes))")
    }

    /// A mirror that is down, one that fails every request after its probe, and one far slower
    /// per connection: each dropped with a message, and the file is exact. 64 MiB: a source is
    /// judged slow only once a request of it has streamed for a second, and 32 MiB was done in
    /// 1.4 s once beside two busy loops, before the crawling mirror was judged.
    @Test func deadFailingAndCrawlingMirrorsAreDropped() throws {
        let source = try www.randomFile("d.bin", size: 64 << 20)
        let faults = try FaultServer(root: www.path)
        defer { faults.stop() }
        let dead = try freeLoopbackPort()
        let result = try runCLI([nginx.baseURL + "/slow/d.bin",
                                 "--mirror", "http://127.0.0.1:\(dead)/d.bin",
                                 "--mirror", faults.baseURL + "/file/d.bin?cut=65536",
                                 "--mirror", faults.baseURL + "/file/d.bin?rate=200000",
                                 "-o", out.file("d.bin"), "--max-connections-per-host", "4", "-n", "8", "--min-segment", "1M"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(out.file("d.bin")) == Checksums.sha256sum(source))
        #expect(result.stderr.contains("mirror http://127.0.0.1:\(dead)/d.bin left out"), "\(result.stderr)")
        #expect(result.stderr.contains("cut=65536 dropped: 2 requests in a row failed"), "\(result.stderr)")
        #expect(result.stderr.contains("rate=200000 dropped: it delivers"), "\(result.stderr)")
    }

    /// A mirror that refuses connections beyond its limit (429) is the one named in the warning,
    /// not the main URL; refusing twice in a row, it is dropped, and the file is exact.
    @Test func aMirrorRefusingConnectionsIsNamedNotTheMainURL() throws {
        let main = try FaultServer()
        let limited = try FaultServer()
        defer { main.stop(); limited.stop() }
        // Segments of 4 MiB: a mirror that joins once checked (beside the transfer) takes halves of
        // them. The main URL at 1 MB/s a connection takes about 4 s: time for the mirror to join
        // and be asked twice at once even when its check is slow on a loaded machine (at 2 MB/s,
        // beside two busy loops, the download once ended before it was).
        let size: Int64 = 32 << 20
        let mainURL = main.dataURL(size: size, "rate=1000000")
        let mirrorURL = limited.dataURL(size: size, "maxconcurrent=1&limitstatus=429&retryafter=none")
        let result = try runCLI([mainURL, "--mirror", mirrorURL, "-o", out.file("r.bin"), "-n", "8", "--min-segment", "1M"])
        #expect(result.status == 0, "\(result.stderr)")
        try main.expectFile(out.file("r.bin"), size: size, sourceLocation: #_sourceLocation)
        #expect(try limited.stats().log.contains { $0.status == 429 }, "the mirror never refused: the test proves nothing")
        #expect(result.stderr.contains("\(mirrorURL): server refused connections (HTTP 429)"), "\(result.stderr)")
        #expect(!result.stderr.contains("\(mainURL): server refused connections"), "\(result.stderr)")
    }

    /// A mirror that closes its connections early (after 64 KiB of each range): the notices of
    /// its failed requests name the mirror, where those requests went, and nothing names the
    /// main URL, whose requests all succeeded; the file is exact.
    @Test func aMirrorClosingConnectionsEarlyIsNamedNotTheMainURL() async throws {
        let main = try FaultServer()
        let cutting = try FaultServer()
        defer { main.stop(); cutting.stop() }
        let size: Int64 = 16 << 20
        let mainURL = main.dataURL(size: size, "rate=4000000")
        let mirrorURL = cutting.dataURL(size: size, "cut=65536")
        var options = DownloadOptions()
        options.destination = .file(out.file("c.bin"))
        options.connections = .fixed(8)
        options.minimumSegmentBytes = 1 << 20
        options.mirrors = [mirrorURL]
        options.retry = RetryPolicy(maximumTries: 5, baseDelaySeconds: 0.05)
        let said = Locked<[String]>([])
        _ = try await Downloader(options: options).download(mainURL) { event in
            switch event {
            case .warning(let warning): said.withLock { $0.append(warning.message) }
            case .retrying(let notice): said.withLock { $0.append(notice.reason) }
            default: break
            }
        }
        try main.expectFile(out.file("c.bin"), size: size, sourceLocation: #_sourceLocation)
        #expect(try cutting.stats().log.contains { $0.range != nil && $0.bytes == 65536 },
                "the mirror never cut a range: the test proves nothing")
        let messages = said.current
        #expect(messages.contains { $0.hasPrefix("\(mirrorURL): ") }, "\(messages)")
        #expect(!messages.contains { $0.contains(mainURL) }, "\(messages)")
    }
}
