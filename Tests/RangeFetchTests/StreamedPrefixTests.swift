import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `rangefetch s3://BUCKET/PREFIX/` lists a page at a time as the batch takes files: against our
/// fault server's fake bucket (`/paged-N-P[-failK]`), whose request log shows objects fetched
/// before the last page is asked for, and a listing that fails on page 3 ending the batch with
/// S3's error while the files before it are kept.
@Suite(.serialized)
final class StreamedPrefixFaultTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-paged")
    }

    deinit { server.stop() }

    private var environment: [String: String] {
        ["AWS_ENDPOINT_URL": server.baseURL, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
         "AWS_REGION": "us-east-1", "AWS_PROFILE": "", "HOME": out.path]
    }

    /// The names `p/k00000.bin` … of the first `count` objects, as saved.
    private static func names(_ count: Int) -> [String] {
        (0..<count).map { "k\(String(format: "%05d", $0)).bin" }
    }

    private func expectFiles(_ directory: String, count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        // The batch journal (.rangefetch-batch) is not one of the files.
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }.sorted()
        #expect(names == Self.names(count), "\(names.count) files: \(names.suffix(3))", sourceLocation: sourceLocation)
        let expected = try server.expectedBytes(size: 100)
        let wrong = try names.filter { try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) != expected }
        #expect(wrong.isEmpty, "\(wrong.count) files differ: \(wrong.prefix(3))", sourceLocation: sourceLocation)
    }

    @Test func objectsAreFetchedBeforeTheLastPageIsListed() throws {
        let result = try runCLI(["--no-config", "s3://paged-300-100/p/", "--no-sign-request", "-d", out.file("dl"), "-j", "4", "--json"],
                                environment: environment, timeoutSeconds: 120)
        #expect(result.status == 0, "\(result.stderr.suffix(500))")
        try expectFiles(out.file("dl"), count: 300)
        // Each object's MD5 (its listing's ETag) was checked.
        #expect(result.stdout.components(separatedBy: "\"event\":\"verified\"").count - 1 == 300, "MD5s not checked")
        let log = try server.stats().log.filter { $0.path.hasPrefix("/paged-300-100/") }
        let pages = log.indices.filter { log[$0].path == "/paged-300-100/" }
        #expect(pages.count == 3, "\(pages.count) listing requests")
        let lastPage = try #require(pages.last)
        #expect(log[lastPage].query.contains("continuation-token=t200"), "\(log[lastPage].query)")
        let objectsBefore = log[..<lastPage].filter { $0.path.hasPrefix("/paged-300-100/p/") }.count
        // Two pages (200 objects) were handed out before the third was asked for; with 4 at once,
        // at least 196 were done, and their requests logged once answered.
        #expect(objectsBefore >= 100, "only \(objectsBefore) object requests before the last page was listed")
    }

    /// A rerun of a finished prefix lists it again (its objects may have changed) but asks for no
    /// object: the batch journal settles every one.
    @Test func aRerunOfAFinishedPrefixListsButFetchesNothing() throws {
        let arguments = ["--no-config", "s3://paged-250-100/p/", "--no-sign-request", "-d", out.file("again"), "-j", "4"]
        let first = try runCLI(arguments, environment: environment, timeoutSeconds: 120)
        #expect(first.status == 0, "\(first.stderr.suffix(500))")
        let before = try server.stats().log.filter { $0.path.hasPrefix("/paged-250-100/") }.count
        let rerun = try runCLI(arguments + ["--json"], environment: environment, timeoutSeconds: 120)
        #expect(rerun.status == 0, "\(rerun.stderr.suffix(500))")
        let requests = try server.stats().log.filter { $0.path.hasPrefix("/paged-250-100/") }.dropFirst(before)
        #expect(requests.allSatisfy { $0.path == "/paged-250-100/" }, "\(requests.filter { $0.path != "/paged-250-100/" }.count) object requests")
        #expect(requests.count == 3, "\(requests.count) listing requests")
        #expect(rerun.stdout.contains("\"already_complete\":250"), "\(rerun.stdout.suffix(400))")
        try expectFiles(out.file("again"), count: 250)
    }

    @Test func aListingThatFailsOnPageThreeEndsTheBatchKeepingTheFilesBefore() throws {
        let result = try runCLI(["--no-config", "s3://paged-500-100-fail3/p/", "--no-sign-request", "-d", out.file("f"), "-j", "4"],
                                environment: environment, timeoutSeconds: 120)
        #expect(result.status == 3, "\(result.stderr.suffix(500))")
        #expect(result.stderr.contains("listing s3://paged-500-100-fail3/p/: HTTP 500: S3 said InternalError (We encountered an internal error. Please try again.)"),
                "\(result.stderr.suffix(500))")
        // The two pages before were fetched whole; nothing after the failing page was asked for.
        try expectFiles(out.file("f"), count: 200)
        let listings = try server.stats().log.filter { $0.path == "/paged-500-100-fail3/" }
        #expect(listings.map(\.status) == [200, 200, 500])
    }

    /// Ctrl-C while the next page is awaited (a store that does not answer) stops the batch at
    /// once: the listing's request is cancelled like any other, exit 130.
    @Test func anInterruptEndsTheWaitForAPage() throws {
        let run = try RunningCLI(["--no-config", "s3://paged-300-100-stall2/p/", "--no-sign-request", "-d", out.file("s"), "-j", "2"],
                                 environment: environment)
        // The first page's 100 objects arrive, then the workers wait for page 2.
        let deadline = Date().addingTimeInterval(20)
        while run.outputLines.filter({ $0.contains("\"event\":\"finish\"") }).count < 100, Date() < deadline { usleep(20_000) }
        #expect(run.outputLines.filter { $0.contains("\"event\":\"finish\"") }.count == 100, "the first page's objects never arrived")
        // Page 2 was asked for when the 100th object was taken (a stalled answer is logged only
        // once it ends, so the log cannot show it).
        usleep(200_000)
        let began = Date()
        run.send(SIGINT)
        let (status, stderr) = try run.wait(timeoutSeconds: 50)
        #expect(status == 130, "\(stderr.suffix(300))")
        #expect(Date().timeIntervalSince(began) < 20, "the interrupt waited for the stalled page")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.file("s")).filter { !$0.hasPrefix(".") }.count == 100)
    }
}

/// A prefix of several pages in moto (signatures enforced) is fetched completely and exactly,
/// with S3's own pages (1,000 keys) from the command line and small ones (`max-keys`) through
/// the library.
@Suite(.serialized)
final class StreamedPrefixS3Tests {
    let out: TemporaryDirectory

    init() throws { out = try TemporaryDirectory("rf-s3-paged") }

    private func expectObjects(_ directory: String, prefix: String, count: Int, size: Int,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }.sorted()
        #expect(names == (0..<count).map { "o\(String(format: "%05d", $0))" }, "\(names.count) files", sourceLocation: sourceLocation)
        let wrong = try names.filter { try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) != S3Server.content(prefix + $0, size: size) }
        #expect(wrong.isEmpty, "\(wrong.count) files differ: \(wrong.prefix(3))", sourceLocation: sourceLocation)
    }

    @Test func aPrefixOfSeveralPagesIsFetchedExactly() async throws {
        let server = try S3Server(objects: ["many/o*2500=8:direct", "few/o*150=20:direct", "other/x=5"], state: out)
        defer { server.stop() }
        let result = try runCLI(["s3://models/many/", "-d", out.file("many"), "-j", "16", "--json"], environment: server.environment,
                                timeoutSeconds: 300)
        #expect(result.status == 0, "\(result.stderr.suffix(500))")
        try expectObjects(out.file("many"), prefix: "many/", count: 2500, size: 8)
        #expect(result.stdout.components(separatedBy: "\"event\":\"verified\"").count - 1 == 2500, "MD5s not checked")

        // Pages of 40 keys (max-keys, signed like the rest): 4 pages, every object once.
        var options = DownloadOptions()
        options.s3 = S3Configuration(signer: SigV4Signer(accessKeyID: server.accessKey, secretAccessKey: server.secretKey, region: "us-east-1"),
                                     region: "us-east-1", endpoint: server.endpoint)
        var input = BatchInput(prefixes: ["s3://models/few/"])
        input.listingPageSize = 40
        var batch = BatchOptions()
        batch.directory = out.file("few")
        batch.jobs = 4
        let summary = try await Downloader(options: options).download(batch: input, options: batch)
        #expect(summary.count(.downloaded) == 150 && summary.succeeded)
        try expectObjects(out.file("few"), prefix: "few/", count: 150, size: 20)

        // s3Entries: the same entries, all at once.
        let entries = try await Downloader(options: options).s3Entries("s3://models/few/")
        #expect(entries.map(\.url) == (0..<150).map { "s3://models/few/o\(String(format: "%05d", $0))" })
        #expect(entries.allSatisfy { $0.checksums.count == 1 && $0.origin == "s3://models/few/" && $0.output?.hasPrefix("o") == true })
    }
}
