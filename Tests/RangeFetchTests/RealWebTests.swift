import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// What the real web does to a long download, from our fault server: signed redirects that
/// expire, servers that limit concurrent connections, origins that disagree on the ETag, and
/// files replaced while they download. Each ends byte-exact, or with a clear error and the
/// partial file kept.
@Suite(.serialized)
final class RealWebTests {
    let server: FaultServer
    let out: TemporaryDirectory
    static let size: Int64 = 16 << 20

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-realweb")
    }

    deinit { server.stop() }

    var target: String { out.file("out.bin") }

    private func download(_ url: String, connections: Int = 8,
                          events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }) async throws -> DownloadSummary {
        var options = DownloadOptions()
        options.destination = .file(target)
        options.connections = .fixed(connections)
        options.minimumSegmentBytes = 512 << 10
        options.retry = RetryPolicy(maximumTries: 5, baseDelaySeconds: 0.05)
        return try await Downloader(options: options).download(url, events: events)
    }

    private func expectExactFile(version: Int = 0, size: Int64 = RealWebTests.size,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        try server.expectFile(target, size: size, version: version, sourceLocation: sourceLocation)
    }

    /// Collects warning messages.
    private func warnings() -> (Locked<[String]>, @Sendable (DownloadEvent) -> Void) {
        let seen = Locked<[String]>([])
        return (seen, { event in if case .warning(let warning) = event { seen.withLock { $0.append(warning.message) } } })
    }

    // MARK: Expiring signed redirects

    /// `signed=T` redirects to a URL valid T seconds. Every response is cut after 1 MB, so a range
    /// takes several requests; at 2 MB/s per connection (8 connections, 16 MiB) the download
    /// takes over a second, and the expiry falls early (0.15 s: during the first responses) or
    /// midway (0.3 s, 0.5 s).
    @Test(arguments: [("0.15", "403"), ("0.5", "403"), ("0.3", "401"), ("0.3", "410"), ("0.3", "400")])
    func anExpiredSignedRedirectIsResolvedAgainFromTheUsersURL(lifetime: String, status: String) async throws {
        let (seen, events) = warnings()
        let url = server.dataURL(size: Self.size, "signed=\(lifetime)&expirestatus=\(status)&rate=2000000&cut=1000000")
        _ = try await download(url, events: events)
        try expectExactFile()
        let log = try server.stats().log.filter { $0.method == "GET" }
        // Requests went to the signed target, some were refused, and fresh signatures came from
        // asking the user's URL again.
        #expect(log.contains { $0.status == Int(status) }, "no request expired: the test proves nothing")
        #expect(log.filter { $0.status == 302 }.count >= 2)
        #expect(seen.current.contains { $0.contains("following") && $0.contains("again") }, "\(seen.current)")
    }

    @Test func aFreshTargetThatRefusesTooEndsWithAClearErrorAndKeepsThePartialFile() async throws {
        // Only the first redirect issues a valid signature; later ones are refused at once.
        let url = server.dataURL(size: Self.size, "signed=0.15&signcount=1&rate=4000000&cut=1000000")
        let error = await expectDownloadError { try await self.download(url) }
        #expect(error?.category == .network)
        #expect(error?.message.contains("freshly resolved") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("Request has expired") == true, "\(error?.message ?? "")")
        #expect(!out.exists("out.bin"))
        #expect(out.exists("out.bin.part.rfjournal"), "the journal must stay for a resume")
    }

    @Test func aResumeAfterTheSignatureExpiredStartsFromTheUsersURL() throws {
        let url = server.dataURL(size: 64 << 20, "signed=0.5&rate=2000000")
        let arguments = [url, "-o", target, "-n", "4", "--min-segment", "16M"]
        let run = try RunningCLI(arguments)
        #expect(run.waitUntilReceived(8 << 20), "never got 8 MiB")
        run.send(SIGKILL)
        _ = try run.wait()
        try server.advanceClock(seconds: 1) // every signature issued so far has expired
        let result = try runCLI(["-q"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        try expectExactFile(size: 64 << 20)
        let journal = try? String(contentsOfFile: target + ".part.rfjournal", encoding: .utf8)
        #expect(journal == nil, "the journal is removed once the file is complete")
    }

    /// A site that wants credentials redirects to storage on another host with a signed URL
    /// (GitHub release assets with a token, S3 presigned links): the user's URL gets the
    /// credentials, the storage never does (S3 answers a request with two kinds of
    /// authentication with 400), also when the signature expires and is renewed midway.
    @Test(arguments: ["30", "0.4"])
    func credentialsGoToTheUsersHostNeverToTheStorageItRedirectsTo(lifetime: String) throws {
        let url = server.dataURL(size: Self.size, "auth=u:p&signed=\(lifetime)&redirecthost=1&rejectauth=1&rate=2000000&cut=1000000")
        let result = try runCLI([url, "-o", target, "-n", "8", "--min-segment", "512K", "-u", "u:p",
                                 "-H", "Cookie: session=secret", "-H", "Authorization: Basic dTpw"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectExactFile()
        let log = try server.stats().log.filter { $0.method == "GET" }
        #expect(!log.contains { $0.status == 400 || $0.status == 401 }, "\(log.map(\.status))")
        if lifetime != "30" {
            #expect(log.contains { $0.status == 403 }, "no signature expired: the test proves nothing")
        }
    }

    // MARK: Servers that limit connections

    /// A server that answers a request beyond its limit with 503 (or 429), at a fixed `-n 8`.
    @Test(arguments: [(1, "503", "1"), (3, "503", "1"), (3, "429", "none"), (8, "503", "1")])
    func aServerThatLimitsConnectionsGetsFewerNotAFailure(limit: Int, status: String, retryAfter: String) async throws {
        let (seen, events) = warnings()
        let url = server.dataURL(size: Self.size, "maxconcurrent=\(limit)&limitstatus=\(status)&retryafter=\(retryAfter)&rate=8000000")
        _ = try await download(url, events: events)
        try expectExactFile()
        let refused = try server.stats().log.filter { $0.status == Int(status) }.count
        if limit >= 8 {
            #expect(refused == 0)
        } else {
            #expect(refused >= 1, "the limit was never hit: the test proves nothing")
            #expect(seen.current.contains { $0.contains("at most") }, "\(seen.current)")
        }
    }

    @Test func theCLIFinishesAgainstAConnectionLimitAtEightConnections() throws {
        let url = server.dataURL(size: Self.size, "maxconcurrent=3&rate=8000000")
        let result = try runCLI([url, "-o", target, "-n", "8", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectExactFile()
        // The progress events show the reduced count.
        #expect(result.stdout.contains("\"target_connections\":3"), "\(result.stdout.suffix(600))")
    }

    // MARK: Origins that disagree, files that change

    @Test(arguments: [2, 8])
    func originsThatDisagreeOnTheETagStillGiveTheExactFile(connections: Int) async throws {
        let (seen, events) = warnings()
        _ = try await download(server.dataURL(size: Self.size, "etagbyconn=1"), connections: connections, events: events)
        try expectExactFile()
        #expect(seen.current.filter { $0.contains("disagree on the ETag") }.count == 1, "\(seen.current)")
        // Once seen, If-Range carries the Last-Modified date.
        let ifRanges = try server.stats().log.compactMap(\.if_range)
        #expect(ifRanges.contains { !$0.hasPrefix("\"") }, "\(ifRanges)")
    }

    @Test func aFileReplacedMidDownloadIsFetchedAgainWholeAsTheNewVersion() async throws {
        let (seen, events) = warnings()
        // Two ranges of 8 MiB, each response cut at 3 MB: their retries come after the first
        // 4 MB went out and meet version 1.
        _ = try await download(server.dataURL(size: Self.size, "changeafter=4000000&rate=8000000&cut=3000000&cutcount=2"),
                               connections: 2, events: events)
        try expectExactFile(version: 1)
        #expect(seen.current.contains { $0.contains("restart 1 of") }, "\(seen.current)")
    }

    @Test func aFileThatKeepsChangingEndsWithAClearError() async throws {
        let url = server.dataURL(size: Self.size, "changeevery=3000000&rate=8000000&cut=1000000")
        let error = await expectDownloadError { try await self.download(url) }
        #expect(error?.category == .network)
        #expect(error?.message.contains("changed 3 times") == true, "\(error?.message ?? "")")
        #expect(!out.exists("out.bin"))
    }
}
