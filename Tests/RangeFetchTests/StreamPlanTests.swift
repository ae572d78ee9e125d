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

    struct HeadRow: Sendable, CustomTestStringConvertible {
        var size: Int64
        var piece: Int64
        var head: Int64
        var round: Int
        /// Every piece, in the order handed out, as (lower, upper).
        var pieces: [(Int64, Int64)]
        var testDescription: String { "size \(size), piece \(piece), head \(head) x \(round)" }
    }

    static let headRows: [HeadRow] = [
        // Rounds of two: 2, 2, then 4, 4, then 8, 8, then the full 16 until the end.
        HeadRow(size: 100, piece: 16, head: 2, round: 2,
                pieces: [(0, 2), (2, 4), (4, 8), (8, 12), (12, 20), (20, 28), (28, 44), (44, 60), (60, 76), (76, 92), (92, 100)]),
        // The stream ends inside the head: the last piece is cut short.
        HeadRow(size: 5, piece: 16, head: 2, round: 2, pieces: [(0, 2), (2, 4), (4, 5)]),
        // One connection: every piece doubles.
        HeadRow(size: 40, piece: 16, head: 1, round: 1, pieces: [(0, 1), (1, 3), (3, 7), (7, 15), (15, 31), (31, 40)]),
        // A head no smaller than the piece: fixed pieces.
        HeadRow(size: 30, piece: 10, head: 64, round: 4, pieces: [(0, 10), (10, 20), (20, 30)]),
        HeadRow(size: 0, piece: 10, head: 2, round: 4, pieces: []),
        // Near Int64.max: a head of 1 doubles 62 times without overflow and the pieces end at the size.
        HeadRow(size: .max, piece: .max, head: 1 << 61, round: 1, pieces: [(0, 1 << 61), (1 << 61, 3 << 61), (3 << 61, .max)]),
    ]

    /// Head pieces start small and grow by rounds, contiguous and in offset order, and the
    /// count agrees with what is handed out.
    @Test(arguments: headRows)
    func headPiecesStartSmallAndDoubleEachRound(row: HeadRow) {
        var plan = StreamPlan(size: row.size, pieceBytes: row.piece, headBytes: row.head, round: row.round)
        #expect(plan.pieceCount == Int64(row.pieces.count))
        var got: [ByteRange] = []
        while !plan.isExhausted {
            let next = plan.pieces(below: .max, atMost: 3)
            if next.isEmpty { break }
            got += next
        }
        #expect(got == row.pieces.map { ByteRange($0.0, $0.1) })
    }

    /// A stream's own sizes: 16 connections, a 64 MiB window. The first pieces are 256 KiB, and
    /// a claimed 2^62 bytes costs a count by arithmetic and one window's worth of pieces.
    @Test func aStreamsHeadIsSmallAndAHugeClaimCostsNothingUpFront() {
        let piece = StreamDownload.streamPieceBytes(window: 64 << 20, connections: 16)
        var plan = StreamPlan(size: 1 << 62, pieceBytes: piece, headBytes: StreamDownload.streamHeadBytes, round: 16)
        #expect(piece == 2 << 20)
        // 16 x 256 KiB + 16 x 512 KiB + 16 x 1 MiB = 28 MiB of head, then 2 MiB pieces.
        #expect(plan.pieceCount == 48 + ((1 << 62) - (28 << 20)) / (2 << 20))
        let first = plan.pieces(below: 64 << 20, atMost: 100)
        #expect(first.prefix(16).allSatisfy { $0.count == 256 << 10 })
        #expect(first[16].count == 512 << 10 && first[32].count == 1 << 20 && first[48].count == 2 << 20)
        #expect(first.count == 48 + 18)
        #expect(plan.plannedBytes == 64 << 20)
    }

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
