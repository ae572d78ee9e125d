import Foundation
import Testing
@testable import RangeFetch

/// HTTPS against nginx with a certificate made for the test, and proxies from the environment.
@Suite(.serialized)
final class TLSAndProxyTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let keys: TemporaryDirectory

    init() throws {
        www = try TemporaryDirectory("rf-www")
        out = try TemporaryDirectory("rf-out")
        keys = try TemporaryDirectory("rf-keys")
    }

    private func makeCertificate() throws -> (cert: String, key: String) {
        try selfSignedCertificate(in: keys)
    }

    @Test func untrustedCertificateFailsUnlessTrustedOrInsecure() throws {
        let certificate = try makeCertificate()
        let nginx = try NginxServer(docroot: www.path, certificate: certificate)
        defer { nginx.stop() }
        let source = try www.randomFile("tls.bin", size: 3 << 20)
        let url = "https://127.0.0.1:\(nginx.tlsPort ?? 0)/tls.bin"

        let refused = try runCLI([url, "-o", out.file("a.bin")])
        #expect(refused.status == 3)
        #expect(refused.stderr.contains("certificate not trusted"), "\(refused.stderr)")
        #expect(!out.exists("a.bin"))

        let trusted = try runCLI([url, "-o", out.file("b.bin"), "--cacert", certificate.cert, "-n", "4"])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(try Checksums.sha256sum(out.file("b.bin")) == Checksums.sha256sum(source))

        let insecure = try runCLI([url, "-o", out.file("c.bin"), "--insecure"])
        #expect(insecure.status == 0, "\(insecure.stderr)")
        #expect(try Checksums.sha256sum(out.file("c.bin")) == Checksums.sha256sum(source))
    }

    /// An https download with a plain-http mirror (the same nginx's plain port) warns once
    /// that the mirror's bytes travel in the clear; the file is exact.
    @Test func aPlainHTTPMirrorOfAnHTTPSDownloadIsWarnedAbout() throws {
        let certificate = try makeCertificate()
        let nginx = try NginxServer(docroot: www.path, certificate: certificate)
        defer { nginx.stop() }
        let source = try www.randomFile("m.bin", size: 8 << 20)
        let url = "https://127.0.0.1:\(nginx.tlsPort ?? 0)/m.bin"
        let mirror = nginx.baseURL + "/m.bin"
        let result = try runCLI([url, "--mirror", mirror, "-o", out.file("m.bin"), "--cacert", certificate.cert, "-n", "4"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(out.file("m.bin")) == Checksums.sha256sum(source))
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("is plain http while the main URL is https") }
        #expect(warnings.count == 1, "\(result.stderr)")
    }

    @Test func httpProxyFromTheEnvironmentIsUsed() throws {
        // The fault server answers absolute-form proxy requests like any other; the origin host
        // (.invalid never resolves) is only reachable through the proxy.
        let proxy = try FaultServer()
        defer { proxy.stop() }
        let size: Int64 = 2 << 20
        let result = try runCLI(["http://origin.invalid/data/\(size)/p.bin", "-o", out.file("p.bin"), "-n", "2"],
                                environment: ["http_proxy": proxy.baseURL, "no_proxy": ""])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out.file("p.bin"))) == proxy.expectedBytes(size: size))
        #expect(try proxy.stats().log.contains { $0.method == "GET" && $0.range != nil })
    }
}
