import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Content codings: every request asks for identity, and a server that encodes anyway has its
/// body decoded, never saved as the file.
@Suite(.serialized)
final class EncodingTests {
    let server: FaultServer
    let out: TemporaryDirectory
    static let size: Int64 = 3 << 20

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-encoding")
    }

    deinit { server.stop() }

    var target: String { out.file("out.bin") }

    private func runGet(_ url: String, _ extra: [String] = []) throws -> TestProcess.Result {
        try runCLI(["--json", url, "-o", target, "-n", "4", "--min-segment", "256K", "--max-tries", "2"] + extra,
                   timeoutSeconds: 60)
    }

    private func expectExactFile(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try server.expectFile(target, size: Self.size, sourceLocation: sourceLocation)
    }

    /// The server's request log without the reference fetches of ``expectExactFile()``.
    private func downloadLog() throws -> [FaultServer.Stats.Entry] {
        try server.stats().log.filter { !$0.path.hasSuffix("/reference.bin") }
    }

    private func warnings(_ result: TestProcess.Result) -> [String] {
        result.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"warning\"") }.map(String.init)
    }

    @Test func serverThatGzipsWhenAcceptEncodingIsAbsentGetsIdentityOnEveryRequest() throws {
        // RFC 9110: no Accept-Encoding allows every coding; this server then really gzips.
        let result = try runGet(server.dataURL(size: Self.size, "encoding=gzip&realgzip=1"))
        #expect(result.status == 0, "\(result.stderr)")
        try expectExactFile()
        let log = try downloadLog()
        #expect(log.contains { $0.method == "HEAD" }, "the probe is logged")
        #expect(log.contains { $0.status == 206 }, "identity answers are fetched as ranges")
        for entry in log {
            #expect(entry.accept_encoding == "identity" && entry.accept_encoding_lines == 1,
                    "\(entry.method) \(entry.range ?? "") sent Accept-Encoding \(entry.accept_encoding ?? "(none)") in \(entry.accept_encoding_lines) lines")
        }
    }

    @Test func firstByteProbeAsksForIdentityToo() throws {
        let result = try runGet(server.dataURL(size: Self.size, "encoding=gzip&realgzip=1&nohead=1"))
        #expect(result.status == 0, "\(result.stderr)")
        try expectExactFile()
        let log = try downloadLog()
        #expect(log.contains { $0.method == "GET" && $0.range == "bytes=0-0" })
        #expect(log.allSatisfy { $0.accept_encoding == "identity" && $0.accept_encoding_lines == 1 })
    }

    @Test func serverThatGzipsRegardlessIsDecodedWithAWarning() throws {
        let result = try runGet(server.dataURL(size: Self.size, "encoding=gzip&realgzip=1&forceencoding=1"))
        #expect(result.status == 0, "\(result.stderr)")
        try expectExactFile()
        let warnings = warnings(result)
        #expect(warnings.contains { $0.contains("Content-Encoding gzip") && $0.contains("decoded") }, "\(result.stdout)")
        let log = try downloadLog()
        #expect(log.allSatisfy { $0.status != 206 }, "an encoded body is never fetched as ranges")
        // The size check used the decoded length: the encoded body's Content-Length differs.
        let gets = log.filter { $0.method == "GET" }
        #expect(gets.count == 1)
        #expect(gets.first.map { $0.bytes != Self.size } == true)
    }

    @Test func bodyThatIsNotTheCodingItClaimsIsAClearErrorNotAFile() throws {
        // Content-Encoding: gzip over identity bytes: libcurl cannot decode it, so nothing is saved.
        let url = server.dataURL(size: Self.size, "encoding=gzip&forceencoding=1")
        let result = try runGet(url)
        #expect(result.status == 3, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(url) && lines[0].contains("Content-Encoding"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target))
        // Not retried: a body that cannot be decoded would fail the same way again.
        #expect(!result.stderr.contains("gave up after"), "\(result.stderr)")
        #expect(try downloadLog().filter { $0.method == "GET" }.count <= 1)
    }

    /// 64 MiB of zeros gzipped (~64 KiB) sent to a request for identity: decoding stops at
    /// ``DecodedSizeLimit``'s 16 MiB floor with one line naming the URL and what to do, no file.
    /// Asked for with -H 'Accept-Encoding: gzip', the same body is decoded whole.
    @Test func aGzipBombSentUnaskedStopsAtTheLimitButOneAskedForIsDecoded() throws {
        let size: Int64 = 64 << 20
        let url = server.dataURL(size: size, name: "bomb.bin", "encoding=gzip&realgzip=1&forceencoding=1&gzipzeros=1")
        let result = try runCLI([url, "-o", target], timeoutSeconds: 60)
        #expect(result.status == 3, "\(result.stderr)")
        // The decoding warning (as for any forced coding), then one line of error.
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("rangefetch: error:") }
        #expect(errors.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("\(url): the server sent the file gzip-encoded although identity was asked, and ")
                && result.stderr.contains("(more than 200 times as much, as a decompression bomb does); stopped there. If the file is really that compressible, ask for the coding with -H 'Accept-Encoding: gzip'"),
                "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target))
        let part = (try? FileManager.default.attributesOfItem(atPath: target + ".part")[.size] as? Int64) ?? 0
        #expect(part <= DecodedSizeLimit.floorBytes, "\(part) decoded bytes written")
        let gets = try downloadLog().filter { $0.method == "GET" && $0.path.hasSuffix("bomb.bin") }
        #expect(gets.count == 1, "not retried: \(gets.count) GETs")

        try? FileManager.default.removeItem(atPath: target + ".part")
        let asked = try runCLI([url, "-o", target, "--overwrite", "-H", "Accept-Encoding: gzip"], timeoutSeconds: 60)
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(FileSystem.size(of: target) == size)
    }

    @Test func usersAcceptEncodingWinsForWholeBodiesAndRangesStayIdentity() throws {
        // A coding the user asks for: the probe carries it, the server gzips, the body is decoded.
        let encoded = try runGet(server.dataURL(size: Self.size, "encoding=gzip&realgzip=1"), ["-H", "Accept-Encoding: gzip"])
        #expect(encoded.status == 0, "\(encoded.stderr)")
        try expectExactFile()
        var log = try downloadLog()
        #expect(log.allSatisfy { $0.accept_encoding == "gzip" && $0.accept_encoding_lines == 1 && $0.status == 200 })
        // A server that does not encode: ranges still ask for identity alone.
        try FileManager.default.removeItem(atPath: target)
        let plain = server.dataURL(size: Self.size, name: "plain.bin")
        let ranged = try runGet(plain, ["-H", "accept-encoding: gzip"])
        #expect(ranged.status == 0, "\(ranged.stderr)")
        log = try downloadLog().filter { $0.path.hasSuffix("plain.bin") }
        #expect(log.contains { $0.method == "HEAD" && $0.accept_encoding == "gzip" })
        let ranges = log.filter { $0.range != nil }
        #expect(!ranges.isEmpty)
        #expect(ranges.allSatisfy { $0.accept_encoding == "identity" && $0.accept_encoding_lines == 1 })
    }

    @Test func libraryReportsTheDecodingWarning() async throws {
        let warnings = Locked<[String]>([])
        var options = DownloadOptions()
        options.destination = .file(target)
        let summary = try await Downloader(options: options).download(
            server.dataURL(size: Self.size, "encoding=gzip&realgzip=1&forceencoding=1")) { event in
            if case .warning(let warning) = event { warnings.withLock { $0.append(warning.message) } }
        }
        #expect(!summary.segmented)
        #expect(summary.bytes == Self.size)
        try expectExactFile()
        #expect(warnings.current.contains { $0.contains("gzip") })
    }
}

struct RequestHeaderLineTests {
    @Test func requestFieldsReplaceTheUsersFieldOfTheSameName() {
        let user = ["Authorization: Bearer x", "accept-encoding: gzip", "If-Range: \"old\"", "X-Odd"]
        let lines = RequestOptions.headerLines(user: user, extra: ["If-Range: \"e1\"", "Accept-Encoding: identity"])
        #expect(lines == ["Authorization: Bearer x", "X-Odd", "If-Range: \"e1\"", "Accept-Encoding: identity"])
        #expect(RequestOptions.headerLines(user: user, extra: []) == user)
        #expect(RequestOptions.fieldName("Accept-Encoding;") == "accept-encoding")
        #expect(RequestOptions.fieldName(": x") == nil)
    }
}
