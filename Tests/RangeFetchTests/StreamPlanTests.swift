import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

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
        // The last two pieces' worth (15 bytes) goes out as an even tail of two.
        Row(size: 35, piece: 10, calls: [(0, 4, [(0, 10)]), (40, 10, [(10, 20), (20, 28), (28, 35)])], exhausted: true),
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
        // Rounds of two: 2, 2, then 4, 4, then 8, 8, then whole rounds of the full 16 while more
        // than two rounds of them (64) are left at a round's start, then the 40 left as two even
        // rounds: 4 x 10.
        HeadRow(size: 100, piece: 16, head: 2, round: 2,
                pieces: [(0, 2), (2, 4), (4, 8), (8, 12), (12, 20), (20, 28), (28, 44), (44, 60), (60, 70), (70, 80), (80, 90), (90, 100)]),
        // 200 - 28 (head) = 172 left: four rounds of 16s, then 44 as 4 x 11.
        HeadRow(size: 200, piece: 16, head: 2, round: 2,
                pieces: [(0, 2), (2, 4), (4, 8), (8, 12), (12, 20), (20, 28), (28, 44), (44, 60), (60, 76), (76, 92), (92, 108),
                         (108, 124), (124, 140), (140, 156), (156, 167), (167, 178), (178, 189), (189, 200)]),
        // The stream ends inside the head: the last piece is cut short.
        HeadRow(size: 5, piece: 16, head: 2, round: 2, pieces: [(0, 2), (2, 4), (4, 5)]),
        // One connection: every piece doubles.
        HeadRow(size: 40, piece: 16, head: 1, round: 1, pieces: [(0, 1), (1, 3), (3, 7), (7, 15), (15, 28), (28, 40)]),
        // A head no smaller than the piece: fixed pieces, and a stream of less than two rounds
        // is all tail: two rounds of 4 even pieces.
        HeadRow(size: 30, piece: 10, head: 64, round: 4, pieces: [(0, 4), (4, 8), (8, 12), (12, 16), (16, 20), (20, 24), (24, 28), (28, 30)]),
        HeadRow(size: 100, piece: 10, head: 10, round: 2, pieces: [(0, 10), (10, 20), (20, 30), (30, 40), (40, 50), (50, 60),
                                                                   (60, 70), (70, 80), (80, 90), (90, 100)]),
        HeadRow(size: 0, piece: 10, head: 2, round: 4, pieces: []),
        // Near Int64.max: a head of 1 doubles 62 times without overflow and the pieces end at the size.
        // Two rounds of .max overflow: the tail begins at once, 2^61 - 1 left as 2^60 and 2^60 - 1.
        HeadRow(size: .max, piece: .max, head: 1 << 61, round: 1,
                pieces: [(0, 1 << 61), (1 << 61, 3 << 61), (3 << 61, (3 << 61) + (1 << 60)), ((3 << 61) + (1 << 60), .max)]),
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
        // 16 x 256 KiB + 16 x 512 KiB + 16 x 1 MiB = 28 MiB of head, then rounds of 2 MiB
        // pieces, then the last 36 MiB as an even tail of 32: 48 + 16 x (2^37 - 2) + 32.
        #expect(plan.pieceCount == 48 + (1 << 41))
        let first = plan.pieces(below: 64 << 20, atMost: 100)
        #expect(first.prefix(16).allSatisfy { $0.count == 256 << 10 })
        #expect(first[16].count == 512 << 10 && first[32].count == 1 << 20 && first[48].count == 2 << 20)
        #expect(first.count == 48 + 18)
        #expect(plan.plannedBytes == 64 << 20)
    }

    /// 256 MiB at 16 connections: after the 28 MiB head, whole rounds of 2 MiB, then the last
    /// 36 MiB as two even rounds of 16, not a last round of 2 pieces on 2 of 16 connections.
    @Test func theTailIsTwoEvenRounds() {
        var plan = StreamPlan(size: 256 << 20, pieceBytes: 2 << 20, headBytes: StreamDownload.streamHeadBytes, round: 16)
        let pieces = plan.pieces(below: .max, atMost: 1000)
        #expect(Int64(pieces.count) == plan.pieceCount)
        #expect(pieces.count == 48 + 6 * 16 + 32)
        let tail = pieces.suffix(32)
        #expect(tail.first?.lower == 220 << 20 && tail.last?.upper == 256 << 20)
        #expect(tail.allSatisfy { $0.count == (36 << 20) / 32 }, "\(tail.map(\.count))")
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
