import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The fast reading of plain URLs (``PlainURL``) agrees with libcurl's wherever it answers, and
/// names files as the general path does; no sockets.
struct PlainURLTests {
    /// (URL, whether it is plain).
    static let table: [(String, Bool)] = [
        ("http://127.0.0.1:8080/data/4096/f0000001.bin", true),
        ("https://cdn.example.com/a/b/model-00001-of-00004.safetensors", true),
        ("http://h", true),
        ("http://h/", true),
        ("http://h:80/x", true),
        ("https://h:65535/x", true),
        ("http://0.0.0.0/x", true),
        ("http://255.255.255.255/x", true),
        ("http://a-b.c9.example/x", true),
        ("http://h/a/../b", true),
        ("http://h/a/.", true),
        ("http://h/a/..", true),
        ("http://h/.hidden", true),
        ("http://h/A~b_c-d.E", true),
        ("http://h/" + String(repeating: "n", count: 300) + ".bin", true),
        ("http://" + String(repeating: "a", count: 64) + ".example/x", true),
        ("http://" + String(repeating: "a", count: 300) + "/x", true),
        ("HTTP://h/x", false),
        ("http://H/x", false),
        ("http://Example.com/x", false),
        ("http://127.1/x", false),
        ("http://127.0.0.01/x", false),
        ("http://256.0.0.1/x", false),
        ("http://0x7f.0.0.1/x", false),
        ("http://1234/x", false),
        ("http://1.2.3.4.5/x", false),
        ("http://h..x/x", false),
        ("http://.h/x", false),
        ("http:///x", false),
        ("http://h:/x", false),
        ("http://h:0/x", false),
        ("http://h:080/x", false),
        ("http://h:65536/x", false),
        ("http://h:8a/x", false),
        ("http://u:p@h/x", false),
        ("http://[::1]/x", false),
        ("http://h/x?y=1", false),
        ("http://h/x#y", false),
        ("http://h/a%20b", false),
        ("http://h/a b", false),
        ("http://h/a\\b", false),
        ("http://h/caf\u{e9}", false),
        ("ftp://h/x", false),
        ("s3://bucket/key", false),
        ("h/x", false),
        ("", false),
    ]

    @Test(arguments: table)
    func acceptsOnlyPlainURLs(url: String, plain: Bool) {
        #expect((PlainURL(url) != nil) == plain)
    }

    @Test(arguments: table)
    func splitsAsLibcurlDoes(url: String, plain: Bool) {
        guard let fast = PlainURL(url) else { return }
        #expect(fast.parts == URLParts(parsedByCurl: url))
    }

    /// Every printable ASCII byte in the host, the port and the path: accepted only where libcurl
    /// splits the URL the same way.
    @Test func everyCharacterAgreesWithLibcurl() {
        var accepted = 0
        for value in UInt8(0x20)...UInt8(0x7e) {
            let character = String(UnicodeScalar(value))
            for url in ["http://h\(character)x/f", "http://h:8\(character)/f", "http://h/a\(character)b/c\(character)",
                        "http://1.2.3.\(character)/f", "https://\(character)/f"] {
                guard let fast = PlainURL(url) else { continue }
                accepted += 1
                #expect(fast.parts == URLParts(parsedByCurl: url), "\(url)")
            }
        }
        #expect(accepted > 60)
    }

    /// The name a plain URL gives is the one the general path (libcurl's split, the last
    /// segment decoded and made usable) gives.
    @Test(arguments: table)
    func namesAsTheGeneralPathDoes(url: String, plain: Bool) {
        guard let fast = PlainURL(url), let parts = URLParts(parsedByCurl: url) else { return }
        let general = FileName.fromURLPath(parts.path).flatMap { FileName.usable($0, from: .userURL) } ?? FileName.fallback
        #expect(NameSource.name(fast) == general)
        #expect(NameSource.nameFromURL(url) == general)
    }

    /// Lines through the list parser give the same entries whether their URLs are plain or go
    /// to libcurl (upper case scheme), and the same error for a malformed one.
    @Test func listEntriesAgreeWithTheGeneralPath() throws {
        let plain = "http://h/d/f1.bin\nhttps://h:8443/g.iso\n  out=x.bin\nhttp://10.0.0.1/a/../b\n"
        let general = "HTTP://h/d/f1.bin\nHTTPS://h:8443/g.iso\n  out=x.bin\nHTTP://10.0.0.1/a/../b\n"
        let fast = try Manifest.parse(plain, source: "list")
        let slow = try Manifest.parse(general, source: "list")
        #expect(fast.map { $0.expectedPath(defaultDirectory: "out") } == slow.map { $0.expectedPath(defaultDirectory: "out") })
        #expect(fast.map(\.output) == slow.map(\.output))
        #expect(fast.map(\.origin) == slow.map(\.origin))
        #expect(fast.map { $0.expectedPath(defaultDirectory: "out") } == ["out/f1.bin", "out/x.bin", "out/b"])
        #expect(throws: DownloadError.self) { try Manifest.parse("http://h/ok\nhttp://h:99999/f\n", source: "list") }
    }
}
