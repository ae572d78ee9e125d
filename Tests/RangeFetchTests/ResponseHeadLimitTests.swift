import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Servers whose response heads are absurd: too large, too many lines, a Content-Length that is
/// no length. Each ends in one clear line naming the URL and exit status 3, not a crash, a retry
/// storm or an allocation of the server's choosing.
@Suite(.serialized)
final class ResponseHeadLimitTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-heads")
    }

    deinit { server.stop() }

    static let hostileHeads: [(query: String, fragment: String)] = [
        ("bigheader=1048576", "header line over 100 KiB"),                  // refused by libcurl (CURLE_OUT_OF_MEMORY)
        ("manyheaders=1024&headerwidth=1024", "over 300 KiB"),               // 1 MiB in 1 KiB lines: libcurl's and our byte cap
        ("manyheaders=2000&headerwidth=500", "over 300 KiB"),                // ~1 MiB in 2,000 lines
        ("manyheaders=12000&headerwidth=1", "10000 lines"),                  // 12,000 short lines: our line cap
        ("contentlength=-5", "Content-Length"),                              // libcurl: "Invalid Content-Length"
        ("contentlength=abc", "Content-Length"),
        ("contentlength=99999999999999999999", "Content-Length '99999999999999999999'"),
        ("contentlength=9223372036854775808", "Content-Length '9223372036854775808'"),  // 2^63
        ("contentlength=9223372036854775807", "Content-Length '9223372036854775807'"),  // 2^63-1: past 4 EiB
        ("contentlength=5,%206", "Content-Length '5, 6'"),
    ]

    @Test(arguments: hostileHeads)
    func absurdResponseHeadIsOneClearNetworkError(query: String, fragment: String) throws {
        let url = server.dataURL(size: 1000, query)
        let clock = ContinuousClock()
        let start = clock.now
        let result = try runCLI([url, "-o", out.file("out.bin")], timeoutSeconds: 30)
        #expect(result.status == 3, "\(query): \(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(query): \(result.stderr)")
        #expect(lines.first.map { $0.contains(url) && $0.contains(fragment) } == true, "\(query): \(result.stderr)")
        #expect(result.stderr.utf8.count < 1000, "the error quotes the server, it does not echo it")
        #expect(clock.now - start < .seconds(5), "not retried as if transient")
        #expect(!FileManager.default.fileExists(atPath: out.file("out.bin")))
    }

    /// A big head a browser or libcurl takes is taken: 2,000 lines and about 290 KiB, or
    /// 9,000 short lines (the limits were 256 KiB and 1,000 lines).
    @Test(arguments: ["manyheaders=2000&headerwidth=120", "manyheaders=9000&headerwidth=4"])
    func aBigButBoundedHeadIsAccepted(query: String) throws {
        let result = try runCLI([server.dataURL(size: 3 << 20, query), "-o", out.file("big.bin"), "-n", "4"], timeoutSeconds: 60)
        #expect(result.status == 0, "\(query): \(result.stderr)")
        try server.expectFile(out.file("big.bin"), size: 3 << 20, version: 0, sourceLocation: #_sourceLocation)
    }

    @Test func repeatedEqualContentLengthsAreOneLength() throws {
        let result = try runCLI([server.dataURL(size: 1000, "contentlength=1000,%201000"), "-o", out.file("same.bin")],
                                timeoutSeconds: 30)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.file("same.bin")))
    }
}
