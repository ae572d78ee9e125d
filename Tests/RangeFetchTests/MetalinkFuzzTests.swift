import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Mutated metalinks and `Link` headers (``Fuzz``, seeded): no crash, no hang; whatever parses
/// keeps the promises — a plain file name, only http(s) URLs, pieces that add up to the size.
struct MetalinkFuzzTests {
    static let document = Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="dir/f.bin">
            <size>2500</size>
            <hash type="sha-256">\(String(repeating: "ab", count: 32))</hash>
            <pieces length="1000" type="sha-1"><hash>\(String(repeating: "cd", count: 20))</hash><hash>\(String(repeating: "cd", count: 20))</hash><hash>\(String(repeating: "cd", count: 20))</hash></pieces>
            <url priority="1" location="de">http://a.example/f</url>
            <url priority="2">https://b.example/f</url>
            <url>ftp://c.example/f</url>
          </file>
        </metalink>
        """.utf8)

    @Test func mutatedMetalinksParseSafelyOrFailClearly() {
        #expect((try? Metalink.parse(Self.document, origin: "f.meta4")) != nil)
        Fuzz.run("metalink", cases: 1_500) { random in
            let bytes = random.mutatedBytes(Self.document)
            let metalink: Metalink
            do throws(DownloadError) {
                metalink = try Metalink.parse(bytes, origin: "f.meta4")
            } catch {
                return error.message.contains("f.meta4") ? nil : "an error not naming the metalink: \(error.message)"
            }
            if metalink.name.contains("/") || metalink.name.isEmpty || metalink.name == ".." { return "unsafe name '\(metalink.name)'" }
            if metalink.locations.isEmpty { return "no locations" }
            for location in metalink.locations where (try? SourceAddress.http(location.url)) == nil {
                return "a non-http(s) URL kept: \(location.url)"
            }
            if let pieces = metalink.pieces, let size = metalink.size {
                let last = pieces.range(pieces.digests.count - 1, size: size)
                if pieces.digests.isEmpty ? size != 0 : last.upper != size { return "pieces do not cover \(size) bytes" }
            }
            return nil
        }
    }

    @Test func mutatedLinkHeadersGiveOnlyHTTPDuplicates() {
        let corpus = ["<http://a/f>; rel=duplicate; pri=1", "<https://b/f>; rel=\"duplicate\"",
                      "<http://a/f.meta4>; rel=describedby; type=\"application/metalink4+xml\"", "<file:///x>; rel=duplicate"]
        Fuzz.run("Link", cases: 3_000) { random in
            let value = (0..<(1 + random.below(4))).map { _ in random.mutated(random.pick(corpus), corpus: corpus) }.joined(separator: ", ")
            let duplicates = LinkHeader.duplicates(value, of: "http://main/f")
            if duplicates.count > LinkHeader.maximumDuplicates { return "\(duplicates.count) duplicates" }
            for url in duplicates + [LinkHeader.metalinkDescription(value)].compactMap({ $0 }) where (try? SourceAddress.http(url)) == nil {
                return "'\(value)' gave a non-http(s) URL \(url)"
            }
            return nil
        }
    }
}
