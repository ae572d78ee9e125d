import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Errors carry the URL they are about as a field (``DownloadError/url``), redacted, and the
/// batch line and the `--json` error object are built from it rather than from the message text.
@Suite(.serialized)
final class ErrorURLTests {
    let server: FaultServer
    let out: TemporaryDirectory
    static let size: Int64 = 4 << 20
    /// A query parameter whose value is a secret: it must never reach the field.
    static let signature = "X-Amz-Signature=secret"

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-errurl")
    }

    deinit { server.stop() }

    private func download(_ url: String, configure: (inout DownloadOptions) -> Void = { _ in }) async -> DownloadError? {
        var options = DownloadOptions()
        options.destination = .file(out.file("out.bin"))
        options.connections = .fixed(4)
        options.minimumSegmentBytes = 256 << 10
        options.retry = RetryPolicy(maximumTries: 3, baseDelaySeconds: 0.05)
        configure(&options)
        return await expectDownloadError { try await Downloader(options: options).download(url) }
    }

    private func expectURL(_ error: DownloadError?, _ url: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.url == Redaction.url(url), "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.url?.contains("secret") == false, sourceLocation: sourceLocation)
        #expect(error?.message.contains(error?.url ?? "-") == true, "the message names the field's URL", sourceLocation: sourceLocation)
    }

    // MARK: Failures of requests

    @Test func refusedRequestCarriesItsURL() async {
        let url = server.dataURL(size: Self.size, "status=404&\(Self.signature)")
        let error = await download(url)
        #expect(error?.httpStatus == 404)
        expectURL(error, url)
    }

    @Test func deadServerCarriesItsURL() async throws {
        let url = "http://127.0.0.1:\(try freeLoopbackPort())/f.bin?\(Self.signature)"
        let error = await download(url)
        #expect(error?.category == .network)
        expectURL(error, url)
    }

    /// Retried until the tries are spent: the given-up error, reworded, keeps the URL.
    @Test func aBadContentDigestCarriesItsURLAfterGivingUp() async {
        let url = server.dataURL(size: Self.size, "contentdigest=bad&\(Self.signature)")
        let error = await download(url)
        #expect(error?.message.contains("Content-Digest") == true && error?.message.contains("gave up") == true,
                "\(String(describing: error))")
        expectURL(error, url)
    }

    /// The probe's own check: a first-byte answer with another Content-Range.
    @Test func probeFailureCarriesItsURL() async {
        let url = server.dataURL(size: Self.size, "nohead=1&contentrange=bytes%205-5/100&\(Self.signature)")
        let error = await download(url)
        #expect(error?.message.contains("byte 0") == true, "\(String(describing: error))")
        expectURL(error, url)
    }

    /// A mirror that cuts every real range (its 4 KiB samples pass): the download fails on the
    /// mirror's request, and the error names the mirror, not the main URL.
    @Test func mirrorFailureCarriesTheMirrorsURL() async {
        // Not so fast that the file is done before the mirror, checked beside it, joins.
        let main = server.dataURL(size: Self.size, name: "m.bin", "rate=2000000")
        let mirror = server.dataURL(size: Self.size, name: "m.bin", "cut=65536&\(Self.signature)")
        let error = await download(main) { options in
            options.mirrors = [mirror]
            options.retry = RetryPolicy(maximumTries: 1, baseDelaySeconds: 0.05)
        }
        expectURL(error, mirror)
    }

    /// A mirror that fails twice in a row is dropped; the retry of its range names the mirror's
    /// own failure and URL (no stand-in error), and the file still comes whole from the main URL.
    @Test func droppedSourcesRetryNamesItsFailure() async throws {
        let size: Int64 = 8 << 20
        let main = server.dataURL(size: size, name: "d.bin", "rate=4000000")
        let mirror = server.dataURL(size: size, name: "d.bin", "cut=65536&\(Self.signature)")
        var options = DownloadOptions()
        options.destination = .file(out.file("d.bin"))
        options.connections = .fixed(4)
        options.minimumSegmentBytes = 512 << 10
        options.mirrors = [mirror]
        options.retry = RetryPolicy(maximumTries: 5, baseDelaySeconds: 0.05)
        let reasons = Locked<[String]>([])
        _ = try await Downloader(options: options).download(main) { event in
            if case .retrying(let notice) = event { reasons.withLock { $0.append(notice.reason) } }
        }
        try server.expectFile(out.file("d.bin"), size: size, sourceLocation: #_sourceLocation)
        let dropped = reasons.current.filter { $0.contains("its source was dropped") }
        #expect(!dropped.isEmpty, "\(reasons.current)")
        #expect(dropped.allSatisfy { $0.hasPrefix("\(Redaction.url(mirror)): ") && !$0.contains("secret") }, "\(dropped)")
    }

    @Test func s3ListingErrorCarriesTheListingsURL() {
        var pager = ListingPager(what: "s3://b/p/")
        let error = #expect(throws: DownloadError.self) {
            _ = try pager.next("a")
            _ = try pager.next("a")
        }
        #expect(error?.url == "s3://b/p/")
    }

    // MARK: Errors about no URL, and rewording

    @Test func optionErrorsCarryNoURL() {
        var options = DownloadOptions()
        options.connections = .fixed(0)
        let error = #expect(throws: DownloadError.self) { try options.validate() }
        #expect(error != nil && error?.url == nil)
    }

    @Test func rewordingKeepsURLRemedyAndRetryAfter() {
        var error = DownloadError(.httpStatus(401), "http://h/f?sig=abc: server answered HTTP 401", url: "http://h/f?sig=abc",
                                  remedy: .giveCredentials)
        error.retryAfterSeconds = 7
        let reworded = error.with(message: "\(error.message); more")
        #expect(reworded.url == "http://h/f?sig=REDACTED")
        #expect(reworded.remedy == .giveCredentials && reworded.retryAfterSeconds == 7 && reworded.httpStatus == 401)
        #expect(reworded.message == "http://h/f?sig=REDACTED: server answered HTTP 401; more")
    }

    // MARK: Batch lines and JSON

    /// The list line always; the entry's URL too unless the message already names it.
    @Test(arguments: [
        ("http://a/f.bin", "http://a/f.bin: server answered HTTP 404", "list.txt:3: http://a/f.bin: server answered HTTP 404"),
        ("http://m/f.bin", "http://m/f.bin: connection closed", "list.txt:3 (http://a/f.bin): http://m/f.bin: connection closed"),
        (nil, "out.bin is not writable", "list.txt:3 (http://a/f.bin): out.bin is not writable"),
    ] as [(String?, String, String)])
    func batchFailureNamesTheListLine(url: String?, message: String, expected: String) {
        let entry = BatchEntry(url: "http://a/f.bin", origin: "list.txt:3")
        let named = BatchRun.naming(entry, in: DownloadError(.httpStatus(404), message, url: url))
        #expect(named.message == expected)
        #expect(named.url == url)
    }

    /// A signed entry URL is matched redacted: it is named once, without its secret.
    @Test func signedBatchEntryIsNamedOnce() {
        let signed = "http://a/f.bin?\(Self.signature)"
        let entry = BatchEntry(url: signed, origin: "list.txt:1")
        let named = BatchRun.naming(entry, in: DownloadError(.httpStatus(403), "\(signed): server answered HTTP 403", url: signed))
        #expect(named.message == "list.txt:1: http://a/f.bin?X-Amz-Signature=REDACTED: server answered HTTP 403")
    }

    @Test func jsonErrorHasTheURLWhenThereIsOne() {
        let about = DownloadError(.httpStatus(404), "http://h/f?sig=abc: server answered HTTP 404", url: "http://h/f?sig=abc")
        #expect(ProgressRenderer.json(error: about, exitCode: 3).contains(#""url":"http://h/f?sig=REDACTED""#))
        let local = DownloadError(.invalidOption, "connections must be between 1 and 64 (got 0)")
        #expect(!ProgressRenderer.json(error: local, exitCode: 2).contains(#""url""#))
    }

    @Test func cliJSONErrorHasTheURL() throws {
        let url = server.dataURL(size: Self.size, "status=404&\(Self.signature)")
        let result = try runCLI(["--json", url, "-o", out.file("cli.bin")])
        #expect(result.status != 0)
        let line = result.stdout.split(separator: "\n").first { $0.contains(#""event":"error""#) }
        let object = line.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(object?["url"] as? String == Redaction.url(url), "\(result.stdout)")
        #expect(line?.contains("secret") == false)
    }
}
