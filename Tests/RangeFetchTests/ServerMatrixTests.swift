import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The same download from the servers people run: nginx over TLS (HTTP/1.1 only, and with HTTP/2
/// offered), Apache httpd, lighttpd, and Python's `http.server` (HTTP/1.0, no ranges). Each is a
/// real server on 127.0.0.1, started for the test and stopped by pid.
@Suite(.serialized)
final class ServerMatrixTests {
    static let size: Int64 = 24 << 20
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let source: String

    init() throws {
        www = try TemporaryDirectory("rf-www")
        out = try TemporaryDirectory("rf-out")
        source = try www.randomFile("file.bin", size: Self.size)
        try OtherServer.shareable(www.path)
        // Served files are usually older than a second; Apache calls the validators of a file
        // written this second weak (see `apacheServesAFileWithWeakValidatorsAsOneStream`).
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: source)
    }

    private func expectSameBytes(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let same = try Checksums.sha256sum(path) == Checksums.sha256sum(source)
        #expect(same, "\(path) differs from the served file", sourceLocation: sourceLocation)
    }

    @Test(arguments: OtherServer.Kind.allCases)
    func theSameDownloadFromTheServersPeopleRun(kind: OtherServer.Kind) throws {
        let server = try OtherServer(kind, docroot: www.path)
        defer { server.stop() }
        let target = out.file("\(kind.rawValue).bin")
        let result = try runCLI([server.baseURL + "/file.bin", "-o", target, "-n", "8", "--json", "-v"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectSameBytes(target)
        switch kind {
        case .pythonHTTPServer:
            // HTTP/1.0 without ranges: one plain stream, and the events say so.
            #expect(result.stdout.contains("\"segmented\":false"), "\(result.stdout.prefix(800))")
            #expect(result.stdout.contains("\"protocol\":\"h1.0\""), "\(result.stdout.suffix(800))")
        case .apache, .lighttpd:
            server.stop() // lighttpd writes its access log out when it stops
            let ranged = server.accessLog().filter { $0.hasPrefix("GET /file.bin") && $0.contains(" 206 ") }
            #expect(ranged.count >= 8, "\(server.accessLog())")
            #expect(result.stdout.contains("\"protocol\":\"h1.1\""))
        }
    }

    /// Apache calls the validators of a file modified less than a second ago (or in the future)
    /// weak: a `W/` ETag, and a range asked with a date `If-Range` is answered with the whole
    /// file. The download carries on as one stream and ends with the exact bytes.
    @Test func apacheServesAFileWithWeakValidatorsAsOneStream() throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 3600)], ofItemAtPath: source)
        let server = try OtherServer(.apache, docroot: www.path)
        defer { server.stop() }
        let target = out.file("weak.bin")
        let result = try runCLI([server.baseURL + "/file.bin", "-o", target, "-n", "8", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectSameBytes(target)
        #expect(result.stdout.contains("\"etag\":\"W/"), "\(result.stdout.prefix(600))")
        #expect(result.stdout.contains("ignored the Range header (HTTP 200); downloading as one stream"), "\(result.stdout)")
        #expect(server.accessLog().contains { $0.hasPrefix("GET /file.bin") && $0.contains(" 200 \(Self.size)") })
    }

    /// Over TLS each range has a TCP connection of its own, also where HTTP/2 could multiplex
    /// them onto one, and connections after the first resume its TLS session (TLS 1.3 tickets and
    /// TLS 1.2 session IDs alike).
    @Test(arguments: [(false, "TLSv1.3"), (true, "TLSv1.3"), (true, "TLSv1.2"), (false, "TLSv1.2")])
    func httpsUsesOneTCPConnectionPerRangeAndResumesTLSSessions(http2: Bool, tls: String) throws {
        let keys = try TemporaryDirectory("rf-keys")
        let certificate = try selfSignedCertificate(in: keys)
        let nginx = try NginxServer(docroot: www.path, certificate: certificate, http2: http2,
                                    tlsProtocols: tls == "TLSv1.3" ? "TLSv1.2 TLSv1.3" : "TLSv1.2")
        defer { nginx.stop() }
        let target = out.file("tls.bin")
        let result = try runCLI(["https://127.0.0.1:\(nginx.tlsPort ?? 0)/file.bin", "-o", target, "-n", "8",
                                 "--min-segment", "1M", "--cacert", certificate.cert, "--json", "-v"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectSameBytes(target)
        let ranges = nginx.tlsAccessLog().filter { $0.status == 206 }
        let connections = Set(ranges.map(\.connection))
        #expect(connections.count >= 8, "ranges shared \(connections.count) TCP connections")
        let expected = http2 ? "HTTP/2.0" : "HTTP/1.1"
        #expect(ranges.allSatisfy { $0.protocolName == expected }, "\(ranges.map(\.protocolName))")
        #expect(ranges.allSatisfy { $0.tlsVersion == tls }, "\(ranges.map(\.tlsVersion))")
        #expect(result.stdout.contains("\"protocol\":\"\(http2 ? "h2" : "h1.1")\""))
        // The probe's connection made the one full handshake; the range connections resumed it.
        // TLS 1.3 tickets are meant for one use and libcurl 7.88 caches one per host: in about 1
        // run of 18 here, connections opened after the first range had finished made full
        // handshakes (a server signature each; the same one round trip as a resumption in 1.3).
        let full = Set(ranges.filter { !$0.sessionReused }.map(\.connection))
        let allowed = tls == "TLSv1.2" ? 1 : connections.count - 1
        #expect(full.count <= allowed, "\(full.count) of \(connections.count) connections made a full TLS handshake")
        #expect(ranges.contains { $0.sessionReused }, "no connection resumed a TLS session")
        let tcp = result.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"progress\"") }
            .compactMap { line in line.firstRange(of: "\"tcp_connections\":").map { Int(line[$0.upperBound...].prefix { $0.isNumber }) ?? 0 } }
        #expect((tcp.max() ?? 0) >= 8, "progress reported \(tcp) TCP connections")
        // -v tells new connections from reused ones, with their set-up and first-byte times.
        #expect(result.stdout.contains("\"new_connection\":true,\"setup_seconds\":"), "\(result.stdout.prefix(800))")
        #expect(result.stdout.contains("\"first_byte_seconds\":"), "\(result.stdout.prefix(800))")
    }
}
