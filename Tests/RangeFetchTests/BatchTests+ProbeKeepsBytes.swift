import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A batch probes each file with a `GET` of its first 256 KiB and keeps them
/// (`DownloadSession.probeKeepsBytes`): a file that small comes whole in that one request, a
/// larger one's download starts after the bytes the probe brought, and no byte is asked twice.
/// Real nginx for files that behave (`BatchTests`' scratch), our fault server for one that
/// ignores `Range`.
extension BatchTests {
    /// Files on both sides of the limit: each exact; no `HEAD`; a file of at most 256 KiB takes
    /// one request, and no file's first 256 KiB are asked again by its ranges.
    @Test func aSmallFileTakesOneRequestAndALargerOneNoByteTwice() throws {
        let limit = Int64(DownloadSession.probeKeepsBytes)
        let sizes: [Int64] = [1, 4096, limit, limit + 1, 300 << 10, 3 << 20]
        let sources = try sizes.enumerated().map { try www.randomFile("f\($0.offset).bin", size: $0.element) }
        let path = try list("keeps.txt", sizes.indices.map { "\(nginx.baseURL)/f\($0).bin" })
        let result = try runCLI(["-i", path, "-d", out.path, "-j", "3"])
        #expect(result.status == 0, "\(result.stderr)")
        let log = nginx.accessLog()
        #expect(!log.contains { $0.method == "HEAD" }, "\(log.map { "\($0.method) \($0.path) \($0.range)" })")
        for (index, size) in sizes.enumerated() {
            #expect(try Checksums.sha256sum(out.file("f\(index).bin")) == Checksums.sha256sum(sources[index]))
            let requests = log.filter { $0.path == "/f\(index).bin" }
            if size <= limit {
                #expect(requests.count == 1, "\(size) bytes: \(requests.map(\.range))")
            }
            // The probe asks for the first 256 KiB; every other request starts past them.
            let probes = requests.filter { $0.range == "bytes=0-\(limit - 1)" }
            #expect(probes.count == 1, "\(size) bytes: \(requests.map(\.range))")
            let starts = requests.filter { $0.range != probes.first?.range }.compactMap { request -> Int64? in
                request.range.dropFirst("bytes=".count).split(separator: "-").first.flatMap { Int64($0) }
            }
            #expect(starts.allSatisfy { $0 >= min(limit, size) }, "\(size) bytes: \(requests.map(\.range))")
        }
    }

    /// Under `--max-speed` the probe is a `HEAD`, as a single download's: bytes kept from a
    /// probe would come unlimited.
    @Test func aSpeedLimitKeepsTheHeadProbe() throws {
        let source = try www.randomFile("limited.bin", size: 8192)
        let path = try list("limited.txt", ["\(nginx.baseURL)/limited.bin"])
        let result = try runCLI(["-i", path, "-d", out.path, "--max-speed", "10M"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(nginx.accessLog().contains { $0.method == "HEAD" }, "\(nginx.accessLog().map(\.method))")
        #expect(try Checksums.sha256sum(out.file("limited.bin")) == Checksums.sha256sum(source))
    }

    /// A small file whose bytes do not match the list's `checksum=`: exit 5 naming the file,
    /// nothing at the final path, the bytes kept aside for a look.
    @Test func aSmallFileFailingItsChecksumIsNotPutInPlace() throws {
        try www.randomFile("bad.bin", size: 4096)
        let wrong = String(repeating: "0", count: 64)
        let path = try list("bad.txt", ["\(nginx.baseURL)/bad.bin", "  checksum=sha-256=\(wrong)"])
        let result = try runCLI(["-i", path, "-d", out.path])
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("bad.bin") && result.stderr.contains("mismatch"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.file("bad.bin")))
        #expect(!FileManager.default.fileExists(atPath: out.file("bad.bin.part")))
    }

    /// A server that ignores `Range` (200, the whole body): a small file is kept from the probe's
    /// one answer; a larger one's probe stops at the first byte and the file comes as one stream.
    @Test func aServerIgnoringRangeServesASmallFileOnceAndALargeOneAsOneStream() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        let path = try list("norange.txt", [fault.dataURL(size: 4096, name: "small.bin", "norange=1"),
                             fault.dataURL(size: 4 << 20, name: "large.bin", "norange=1")])
        let result = try runCLI(["-i", path, "-d", out.path, "-j", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        // Counted before expectFile, which fetches the reference bytes from the server.
        let stats = try fault.stats()
        try fault.expectFile(out.file("small.bin"), size: 4096, sourceLocation: #_sourceLocation)
        try fault.expectFile(out.file("large.bin"), size: 4 << 20, sourceLocation: #_sourceLocation)
        let small = stats.log.filter { $0.path.hasSuffix("/small.bin") }
        #expect(small.count == 1 && small.first?.method == "GET", "\(small.map(\.method))")
        // The large file: the probe's stopped answer and one stream, nothing like two files' worth.
        #expect(stats.body_bytes < 4096 + (4 << 20) + (2 << 20), "\(stats.body_bytes) bytes served")
    }
}
