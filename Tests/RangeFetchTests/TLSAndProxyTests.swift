import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

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

    /// An https URL that redirects to plain http: followed with a warning when no netrc login
    /// is at stake; refused with a clear error when a netrc login would be sent in the clear
    /// (libcurl looks netrc up again at every hop), and no request of the plain port carries it.
    @Test func anHTTPSRedirectToPlainHTTPWarnsAndNeverCarriesANetrcLogin() throws {
        let certificate = try makeCertificate()
        let nginx = try NginxServer(docroot: www.path, certificate: certificate, loggedHeader: "Authorization")
        defer { nginx.stop() }
        let source = try www.randomFile("d.bin", size: 3 << 20)
        let url = "https://127.0.0.1:\(nginx.tlsPort ?? 0)/downgrade/d.bin"
        let followed = try runCLI([url, "-o", out.file("d.bin"), "--cacert", certificate.cert, "--no-netrc"])
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(try Checksums.sha256sum(out.file("d.bin")) == Checksums.sha256sum(source))
        #expect(followed.stderr.contains("redirected to plain http (http://127.0.0.1:\(nginx.port)/d.bin)"), "\(followed.stderr)")

        let netrc = keys.file("netrc")
        try "machine 127.0.0.1 login alice password s3cret\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o600)
        let refused = try runCLI([url, "-o", out.file("e.bin"), "--cacert", certificate.cert, "--netrc-file", netrc])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("redirected to plain http, which is refused") && refused.stderr.contains("--no-netrc"),
                "\(refused.stderr)")
        #expect(!out.exists("e.bin"))
        let header = (try? String(contentsOfFile: nginx.prefix.file("header.log"), encoding: .utf8)) ?? ""
        let inTheClear = header.split(separator: "\n").filter { $0.contains(" /d.bin ") && $0.contains("Basic") }
        #expect(inTheClear.isEmpty, "\(header)")
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
