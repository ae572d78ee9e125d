import Foundation
import Testing

/// `--proxy-header` (curl's): lines for the proxy only, on the CONNECT of an https tunnel and on
/// each request a plain http proxy forwards, never to the origin, and not at all without a proxy.
/// The fault server is the proxy (it tunnels CONNECT to 127.0.0.1 and logs every request's
/// headers); nginx, logging the field, is the origin behind the tunnel.
@Suite(.serialized)
final class ProxyHeaderTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let keys: TemporaryDirectory
    let proxy: FaultServer

    init() throws {
        www = try TemporaryDirectory("rf-www")
        out = try TemporaryDirectory("rf-out")
        keys = try TemporaryDirectory("rf-keys")
        proxy = try FaultServer()
    }

    deinit { proxy.stop() }

    @Test func proxyHeaderGoesOnTheConnectAndNeverThroughTheTunnelToTheOrigin() throws {
        let certificate = try selfSignedCertificate(in: keys)
        let origin = try NginxServer(docroot: www.path, certificate: certificate, loggedHeader: "X-Fleet-Tag")
        defer { origin.stop() }
        let source = try www.randomFile("model.bin", size: 4 << 20)
        let url = "https://127.0.0.1:\(origin.tlsPort ?? 0)/model.bin"
        let result = try runCLI([url, "-o", out.file("model.bin"), "-n", "4", "--cacert", certificate.cert,
                                 "--proxy", proxy.baseURL, "--proxy-header", "X-Fleet-Tag: models"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(out.file("model.bin")) == Checksums.sha256sum(source))

        let tunnels = try proxy.stats().log.filter { $0.method == "CONNECT" }
        #expect(!tunnels.isEmpty, "no CONNECT reached the proxy")
        #expect(tunnels.allSatisfy { $0.headers?["x-fleet-tag"] == "models" }, "\(tunnels.map(\.headers))")
        let requests = origin.headerLog().filter { $0.path == "/model.bin" }
        #expect(!requests.isEmpty, "the origin logged no request for the file")
        #expect(requests.allSatisfy { $0.value == nil }, "the origin saw the proxy's header: \(requests)")
    }

    @Test func plainHTTPProxyGetsTheHeaderWithEveryRequest() throws {
        // The fault server answers absolute-form requests itself; .invalid never resolves, so
        // every byte came through the proxy.
        let size: Int64 = 2 << 20
        let result = try runCLI(["http://origin.invalid/data/\(size)/p.bin", "-o", out.file("p.bin"), "-n", "2",
                                 "--proxy", proxy.baseURL, "--proxy-header", "X-Fleet-Tag: models",
                                 "--proxy-header", "X-Cache-Key: p.bin"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out.file("p.bin"))) == proxy.expectedBytes(size: size))
        let log = try proxy.stats().log.filter { $0.path == "/data/\(size)/p.bin" }
        #expect(log.contains { $0.range != nil }, "no ranged request came through the proxy")
        #expect(log.allSatisfy { $0.headers?["x-fleet-tag"] == "models" && $0.headers?["x-cache-key"] == "p.bin" },
                "\(log.map(\.headers))")
    }

    @Test func withoutAProxyTheHeaderIsNotSent() throws {
        let size: Int64 = 1 << 20
        let result = try runCLI([proxy.dataURL(size: size, name: "d.bin"), "-o", out.file("d.bin"), "-n", "2",
                                 "--proxy", "", "--proxy-header", "X-Fleet-Tag: models", "-H", "X-Origin: yes"])
        #expect(result.status == 0, "\(result.stderr)")
        let log = try proxy.stats().log.filter { $0.path == "/data/\(size)/d.bin" }
        #expect(!log.isEmpty)
        #expect(log.allSatisfy { $0.headers?["x-fleet-tag"] == nil && $0.headers?["x-origin"] == "yes" },
                "\(log.map(\.headers))")
    }
}
