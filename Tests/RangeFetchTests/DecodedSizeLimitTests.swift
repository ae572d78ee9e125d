import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// How far a body encoded unasked may decode, as a table at the edges.
struct DecodedSizeLimitTests {
    static let mib: Int64 = 1 << 20
    static let cases: [(encoded: Int64, decoded: Int64, allowed: Bool)] = [
        (61 << 10, 16 * mib, true),          // the floor
        (61 << 10, 16 * mib + 1, false),     // 61 KB that would become 62 MB
        (mib, 200 * mib, true),              // 200:1
        (mib, 200 * mib + 1, false),
        (0, 16 * mib, true),                 // nothing counted yet: the floor holds
        (Int64.max / 2, Int64.max, true),    // no overflow
    ]

    @Test(arguments: cases)
    func allows(encoded: Int64, decoded: Int64, expected: Bool) {
        #expect(DecodedSizeLimit.allows(decoded: decoded, encoded: encoded) == expected)
    }

    @Test func theRefusalIsOneLineNamingTheURLAndTheWayOut() {
        let error = DecodedSizeLimit.refusal(url: "http://h/f.bin", coding: "gzip", decoded: 16 << 20, encoded: 61 << 10)
        #expect(!error.message.contains("\n"))
        #expect(error.message.hasPrefix("http://h/f.bin: the server sent the file gzip-encoded"))
        #expect(error.message.hasSuffix("-H 'Accept-Encoding: gzip', which lifts this limit"))
    }
}
