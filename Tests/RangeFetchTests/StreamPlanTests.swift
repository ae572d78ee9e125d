import Testing
@testable import RangeFetch

/// A stream's pieces are handed out as the window reaches them, never all at once.
struct StreamPlanTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var size: Int64
        var piece: Int64
        /// (limit, atMost) per call, and the pieces each call should return as (lower, upper).
        var calls: [(Int64, Int, [(Int64, Int64)])]
        var exhausted: Bool
        var testDescription: String { "size \(size), piece \(piece)" }
    }

    static let rows: [Row] = [
        // The first piece comes even with a limit of 0: a stream always has work.
        Row(size: 35, piece: 10, calls: [(0, 4, [(0, 10)]), (40, 10, [(10, 20), (20, 30), (30, 35)])], exhausted: true),
        // A piece starting exactly at the limit waits.
        Row(size: 100, piece: 10, calls: [(20, 10, [(0, 10), (10, 20)]), (20, 10, [])], exhausted: false),
        // At most `atMost` pieces, even with the limit far ahead.
        Row(size: 100, piece: 10, calls: [(100, 3, [(0, 10), (10, 20), (20, 30)])], exhausted: false),
        Row(size: 20, piece: 10, calls: [(.max, 10, [(0, 10), (10, 20)]), (.max, 10, [])], exhausted: true),
        Row(size: 0, piece: 10, calls: [(.max, 10, [])], exhausted: true),
        // A claimed size near Int64.max: the last piece ends exactly at the size, no overflow.
        Row(size: .max, piece: 1 << 62, calls: [(.max, 10, [(0, 1 << 62), (1 << 62, .max)])], exhausted: true),
    ]

    @Test(arguments: rows)
    func handsOutPiecesBelowTheLimitOnly(row: Row) {
        var plan = StreamPlan(size: row.size, pieceBytes: row.piece)
        for (limit, atMost, want) in row.calls {
            let got = plan.pieces(below: limit, atMost: atMost)
            #expect(got == want.map { ByteRange($0.0, $0.1) }, "limit \(limit)")
        }
        #expect(plan.isExhausted == row.exhausted)
    }

    /// 2^62 bytes claimed: the count is arithmetic and the first call plans one window's worth.
    @Test func aHugeClaimedSizeCostsNothingUpFront() {
        var plan = StreamPlan(size: 1 << 62, pieceBytes: 16 << 20)
        #expect(plan.pieceCount == 1 << 38)
        #expect(plan.pieces(below: 64 << 20, atMost: 16).count == 4)
        #expect(plan.plannedBytes == 64 << 20)
    }

    @Test(arguments: [(Int64(10), Int64(5), Int64(2)), (11, 5, 3), (1, 5, 1), (0, 5, 0)])
    func countsPiecesWithAShortLastOne(size: Int64, piece: Int64, count: Int64) {
        #expect(StreamPlan(size: size, pieceBytes: piece).pieceCount == count)
    }
}
