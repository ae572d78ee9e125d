import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``CutAlignment`` as a table: a range, the offset a rule wanted, and where the cut lands with
/// and without 1 MiB metalink pieces.
struct CutAlignmentTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var pieceBytes: Int64?
        var lower: Int64
        var upper: Int64
        var offset: Int64
        var cut: Int64
        var testDescription: String { name }
    }

    static let mib: Int64 = 1 << 20

    static let cases: [Case] = [
        Case(name: "no pieces: rounded down to 4 KiB", lower: 0, upper: 10 * mib, offset: 5 * mib + 5000, cut: 5 * mib + 4096),
        Case(name: "no pieces, 4 KiB would reach the lower end: kept as it is", lower: 4097, upper: 10_000, offset: 5000, cut: 5000),
        Case(name: "pieces: the boundary below the offset", pieceBytes: mib, lower: 0, upper: 4 * mib, offset: 2 * mib + 300_000,
             cut: 2 * mib),
        Case(name: "pieces, the offset on a boundary: kept", pieceBytes: mib, lower: 0, upper: 4 * mib, offset: 2 * mib, cut: 2 * mib),
        Case(name: "pieces, no boundary between the lower end and the offset: the next one up", pieceBytes: mib,
             lower: mib + 300_000, upper: 4 * mib, offset: mib + 600_000, cut: 2 * mib),
        Case(name: "pieces, no boundary inside the range: the write alignment", pieceBytes: mib,
             lower: mib + 300_000, upper: 2 * mib, offset: mib + 600_000, cut: mib + 598_016),
        Case(name: "pieces, the boundary below is the lower end itself: the next one up", pieceBytes: mib,
             lower: mib, upper: 3 * mib, offset: mib + 500_000, cut: 2 * mib),
    ]

    @Test(arguments: cases)
    func cuts(_ test: Case) {
        let alignment = CutAlignment(pieceBytes: test.pieceBytes)
        #expect(alignment.cut(test.offset, lower: test.lower, upper: test.upper) == test.cut)
    }
}
