import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Which bytes of an existing file `--continue` compares with the server before taking them.
struct ExistingPrefixCheckTests {
    static let block: Int64 = 64 << 10
    static let cases: [(prefix: Int64, expected: [ByteRange])] = [
        (0, []),
        (1, [ByteRange(0, 1)]),
        (block, [ByteRange(0, block)]),
        (2 * block, [ByteRange(0, 2 * block)]),
        (2 * block + 1, [ByteRange(0, block), ByteRange(block + 1, 2 * block + 1)]),
        (1 << 30, [ByteRange(0, block), ByteRange((1 << 30) - block, 1 << 30)]),
    ]

    @Test func bothEndsOfThePrefixAreCompared() {
        for example in Self.cases {
            #expect(ExistingPrefixCheck.ranges(prefixBytes: example.prefix) == example.expected, "prefix \(example.prefix)")
        }
    }
}
