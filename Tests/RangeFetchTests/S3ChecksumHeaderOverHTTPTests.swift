import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// S3 checksum headers from a server that is not moto (whose CRC64NVME falls back to a CRC32
/// without awscrt): nginx adds `x-amz-checksum-crc64nvme` to every answer for a file, as a
/// relay in front of a store would pass it on. The right value verifies over parallel ranges;
/// a file whose bytes no longer match it exits 5 naming the header; a composite one is noted.
@Suite(.serialized)
final class S3ChecksumHeaderOverHTTPTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let prefix: TemporaryDirectory

    init() throws {
        www = try TemporaryDirectory("rf-www")
        out = try TemporaryDirectory("rf-out")
        prefix = try TemporaryDirectory("rf-nginx")
    }

    @Test func crc64nvmeHeaderVerifiesAndAChangedFileExitsFive() throws {
        let bytes = (0..<3_000_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        try Data(bytes).write(to: URL(fileURLWithPath: www.file("good.bin")))
        var changed = bytes
        changed[1_500_000] ^= 1
        try Data(changed).write(to: URL(fileURLWithPath: www.file("changed.bin")))
        let digest = Digest(.crc64nvme)
        digest.update(bytes)
        let value = Data(digest.finalize().bytes).base64EncodedString()
        let port = try freeLoopbackPort()
        let process = try NginxServer.launch(prefix: prefix.path, port: port, http: """
            default_type application/octet-stream;
            server {
                listen 127.0.0.1:\(port);
                root \(www.path);
                location = /good.bin { add_header x-amz-checksum-crc64nvme "\(value)"; add_header x-amz-checksum-type FULL_OBJECT; }
                location = /changed.bin { add_header x-amz-checksum-crc64nvme "\(value)"; }
                location = /composite.bin { alias \(www.path)/good.bin; add_header ETag '"0123456789abcdef0123456789abcdef-2"';
                                            add_header x-amz-checksum-crc32c "AAAAAA==-2"; add_header x-amz-checksum-type COMPOSITE; }
            }
            """)
        defer { stopProcess(process, signal: SIGQUIT, graceSeconds: 5) }
        let base = "http://127.0.0.1:\(port)"
        let good = try runCLI(["\(base)/good.bin", "-o", out.file("good.bin"), "-n", "4", "--json"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("\"event\":\"verified\",\"algorithm\":\"crc64nvme\""), "\(good.stdout.suffix(400))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out.file("good.bin"))) == Data(bytes))
        let bad = try runCLI(["\(base)/changed.bin", "-o", out.file("changed.bin"), "-n", "4"])
        #expect(bad.status == 5, "\(bad.stderr)")
        #expect(bad.stderr.contains("crc64nvme mismatch (server's x-amz-checksum-crc64nvme header)"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.file("changed.bin")))
        let composite = try runCLI(["\(base)/composite.bin", "-o", out.file("composite.bin"), "-v"])
        #expect(composite.status == 0, "\(composite.stderr)")
        #expect(composite.stderr.contains("x-amz-checksum-crc32c is a checksum of the 2 parts' checksums"), "\(composite.stderr)")
    }
}
