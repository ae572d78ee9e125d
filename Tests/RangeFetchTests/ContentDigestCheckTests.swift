import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``ContentDigestCheck``: a 206's `Content-Digest` (RFC 9530) read from its head and checked
/// against the bytes it delivered; and the rule by which a journal record leaves an unproven
/// response's bytes out (``SegmentState/vouched(unprovenFrom:)``).
struct ContentDigestCheckTests {
    static let content: [UInt8] = (0..<100).map { UInt8($0) }

    static func base64(_ algorithm: DigestAlgorithm, _ bytes: [UInt8]) -> String {
        let digest = Digest(algorithm)
        digest.update(bytes)
        return Data(digest.finalize().bytes).base64EncodedString()
    }

    static func head(status: String = "206 Partial Content", digest: String?) -> ResponseHead {
        var head = ResponseHead()
        var lines = ["HTTP/1.1 \(status)", "Content-Range: bytes 100-199/1000", "Content-Length: 100"]
        if let digest { lines.append("Content-Digest: \(digest)") }
        for line in lines + [""] { head.consume(line: line + "\r\n") }
        return head
    }

    static func check(_ digest: String?, status: String = "206 Partial Content") -> ContentDigestCheck? {
        ContentDigestCheck(head: head(status: status, digest: digest), start: 100)
    }

    static func feed(_ check: ContentDigestCheck, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { check.update($0) }
    }

    @Test func contentMatchingItsDigestIsProven() throws {
        let check = try #require(Self.check("sha-256=:\(Self.base64(.sha256, Self.content)):"))
        #expect(check.start == 100 && check.length == 100)
        Self.feed(check, Array(Self.content[..<30]))
        Self.feed(check, Array(Self.content[30...]))
        #expect(check.outcome(deliveredWhole: true) == .matched)
    }

    @Test func oneChangedByteIsAMismatchNamingBothDigests() throws {
        let check = try #require(Self.check("sha-256=:\(Self.base64(.sha256, Self.content)):"))
        var corrupt = Self.content
        corrupt[0] ^= 0xFF
        Self.feed(check, corrupt)
        guard case .mismatched(let algorithm, let expected, let actual) = check.outcome(deliveredWhole: true) else {
            Issue.record("a changed byte was not caught")
            return
        }
        #expect(algorithm == .sha256 && expected != actual && expected.count == 64)
    }

    @Test func aResponseThatEndedShortOrUncleanlyIsUnproven() throws {
        let short = try #require(Self.check("sha-256=:\(Self.base64(.sha256, Self.content)):"))
        Self.feed(short, Array(Self.content[..<50]))
        #expect(short.outcome(deliveredWhole: true) == .unproven)
        let unclean = try #require(Self.check("sha-256=:\(Self.base64(.sha256, Self.content)):"))
        Self.feed(unclean, Self.content)
        #expect(unclean.outcome(deliveredWhole: false) == .unproven)
    }

    @Test func sha256IsPreferredAndSha512Works() throws {
        let both = try #require(Self.check("sha-512=:\(Self.base64(.sha512, Self.content)):, sha-256=:\(Self.base64(.sha256, Self.content)):"))
        #expect(both.expected.algorithm == .sha256)
        let sha512 = try #require(Self.check("sha-512=:\(Self.base64(.sha512, Self.content)):"))
        Self.feed(sha512, Self.content)
        #expect(sha512.outcome(deliveredWhole: true) == .matched)
    }

    /// No check at all: nothing to prove, the response is taken as before.
    @Test(arguments: [
        ("an algorithm nobody knows", "xxh-test=:AAAA:", "206 Partial Content"),
        ("a digest of the wrong length", "sha-256=:AAAA:", "206 Partial Content"),
        ("no Content-Digest", nil, "206 Partial Content"),
        ("a 200 (not a range)", "sha-256=:\(base64(.sha256, content)):", "200 OK"),
    ] as [(String, String?, String)])
    func noUsableDigestMeansNoCheck(_ why: String, _ digest: String?, _ status: String) {
        #expect(Self.check(digest, status: status) == nil, "\(why)")
    }

    /// The journal's rule: a segment counts no byte past the start of a response not proven yet.
    @Test(arguments: [
        (nil, 150),          // no unproven response: every written byte counts
        (120, 20),           // a response began at 120: only [100, 120) counts
        (250, 150),          // it begins past what is written: nothing held back
        (50, 0),             // never below the segment's start
    ] as [(Int64?, Int64)])
    func aJournalRecordLeavesUnprovenBytesOut(_ unprovenFrom: Int64?, _ expected: Int64) {
        let state = SegmentState(range: ByteRange(100, 300), written: 150)
        #expect(state.vouched(unprovenFrom: unprovenFrom) == SegmentState(range: ByteRange(100, 300), written: expected))
    }
}
