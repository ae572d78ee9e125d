import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `Link` headers (RFC 8288) and the duplicates Metalink/HTTP (RFC 6249) names with them.
struct LinkHeaderTests {
    @Test(arguments: [
        ("<http://a/f>; rel=duplicate", [LinkHeader.Link(target: "http://a/f", parameters: ["rel": "duplicate"])]),
        ("<http://a/f>;rel=\"duplicate\";pri=1;geo=de, <http://b/f,x>; rel=duplicate",
         [LinkHeader.Link(target: "http://a/f", parameters: ["rel": "duplicate", "pri": "1", "geo": "de"]),
          LinkHeader.Link(target: "http://b/f,x", parameters: ["rel": "duplicate"])]),
        ("<http://a/f.meta4>; rel=describedby; type=\"application/metalink4+xml\"",
         [LinkHeader.Link(target: "http://a/f.meta4", parameters: ["rel": "describedby", "type": "application/metalink4+xml"])]),
        ("<http://a/f>; REL=Duplicate; rel=other", [LinkHeader.Link(target: "http://a/f", parameters: ["rel": "Duplicate"])]),
        ("<http://a/f>; rel=\"unterminated", []),
        ("http://a/f; rel=duplicate", []),
        ("<http://a/f", []),
        ("", []),
    ])
    func linksAreParsed(value: String, links: [LinkHeader.Link]) {
        #expect(LinkHeader.parse(value) == links)
    }

    @Test func duplicatesAreAbsoluteHTTPURLsOtherThanTheMainOne() {
        let value = "<http://a/f>; rel=duplicate, <file:///etc/passwd>; rel=duplicate, <ftp://c/f>; rel=duplicate, "
            + "</relative/f>; rel=duplicate, <https://b/f>; rel=\"duplicate other\", <http://main/f>; rel=duplicate, "
            + "<http://a/f>; rel=duplicate, <http://d/f>; rel=alternate"
        #expect(LinkHeader.duplicates(value, of: "http://main/f") == ["http://a/f", "https://b/f"])
        #expect(LinkHeader.duplicates(nil, of: "http://main/f").isEmpty)
    }

    @Test func aMetalinkDescriptionNeedsItsTypeAndAnHTTPURL() {
        let type = "type=\"application/metalink4+xml\""
        #expect(LinkHeader.metalinkDescription("<http://a/f.meta4>; rel=describedby; \(type)") == "http://a/f.meta4")
        #expect(LinkHeader.metalinkDescription("<http://a/f.meta4>; rel=describedby") == nil)
        #expect(LinkHeader.metalinkDescription("<http://a/f.torrent>; rel=describedby; type=application/x-bittorrent") == nil)
        #expect(LinkHeader.metalinkDescription("<file:///f.meta4>; rel=describedby; \(type), <https://b/g.meta4>; rel=describedby; \(type)")
                == "https://b/g.meta4")
        #expect(LinkHeader.metalinkDescription(nil) == nil)
    }

    @Test func aFloodOfDuplicatesIsCut() {
        let value = (0..<100).map { "<http://h\($0)/f>; rel=duplicate" }.joined(separator: ", ")
        #expect(LinkHeader.duplicates(value, of: "http://main/f").count == LinkHeader.maximumDuplicates)
        // The next ones are backups (each checked only in place of a dropped mirror); the rest are dropped.
        #expect(LinkHeader.backupDuplicates(value, of: "http://main/f") == (8..<16).map { "http://h\($0)/f" })
        #expect(LinkHeader.backupDuplicates("<http://a/f>; rel=duplicate", of: "http://main/f").isEmpty)
    }
}

/// Metalink/HTTP end to end: the main URL's `Link: <MIRROR>; rel=duplicate` makes the mirror a
/// source, under the usual agreement; a duplicate that disagrees is left out and named.
@Suite(.serialized)
final class DuplicateLinkTests {
    let out: TemporaryDirectory

    init() throws {
        out = try TemporaryDirectory()
    }

    static func linkQuery(_ target: String) -> String {
        "link=" + ("<\(target)>; rel=duplicate").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    @Test func aDuplicateLinkAddsAMirror() throws {
        let servers = try (0..<2).map { _ in try FaultServer() }
        defer { servers.forEach { $0.stop() } }
        let size: Int64 = 8 << 20
        let mirror = servers[1].dataURL(size: size, name: "d.bin", "rate=4000000")
        let main = servers[0].dataURL(size: size, name: "d.bin", "rate=4000000&" + Self.linkQuery(mirror))
        let result = try runCLI([main, "-o", out.file("d.bin"), "-n", "8"])
        #expect(result.status == 0, "\(result.stderr)")
        let mirrorRanges = try servers[1].stats().log.filter { $0.status == 206 }.count
        try servers[0].expectFile(out.file("d.bin"), size: size, sourceLocation: #_sourceLocation)
        // Its 4 samples, then ranges of the download.
        #expect(mirrorRanges > 4, "the duplicate served \(mirrorRanges) ranges: it was not used")
    }

    @Test func aDuplicateServingOtherBytesIsLeftOut() throws {
        let servers = try (0..<2).map { _ in try FaultServer() }
        defer { servers.forEach { $0.stop() } }
        let size: Int64 = 4 << 20
        let other = servers[1].dataURL(size: size, name: "e.bin", "version=7")
        // Not so fast that the file is done before the duplicate, checked beside it, is judged.
        let main = servers[0].dataURL(size: size, name: "e.bin", "rate=2000000&" + Self.linkQuery(other))
        let result = try runCLI([main, "-o", out.file("e.bin"), "-n", "4"])
        #expect(result.status == 0, "\(result.stderr)")
        try servers[0].expectFile(out.file("e.bin"), size: size, sourceLocation: #_sourceLocation)
        #expect(result.stderr.contains(other) && result.stderr.contains("serves other bytes than the main URL"), "\(result.stderr)")
    }
}
