import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The journal's block CRCs: the grid (``BlockGrid``), the hasher that follows a segment's
/// queued bytes (``BlockHasher``), the resume decision over what was read back
/// (``ResumeBlocks``) and a refetch plan keeping the CRCs of the bytes it keeps.
struct BlockCRCTests {
    static let grid = BlockGrid(blockBytes: 100)

    static func crc(_ data: [UInt8], _ range: Range<Int>) -> UInt32 {
        data.withUnsafeBytes { CRC32C.update(0, UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    static let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }

    // MARK: The grid

    @Test(arguments: [
        // (segment, block index, expected block)
        (ByteRange(0, 1000), 0, ByteRange(0, 100)),
        (ByteRange(0, 1000), 9, ByteRange(900, 1000)),
        (ByteRange(250, 1000), 0, ByteRange(250, 300)), // a split tail starts mid-cell
        (ByteRange(250, 1000), 1, ByteRange(300, 400)),
        (ByteRange(250, 330), 1, ByteRange(300, 330)), // clipped at the segment's end
    ])
    func blocksAreCellsClippedToTheSegment(range: ByteRange, index: Int, expected: ByteRange) {
        #expect(Self.grid.block(index, of: range) == expected)
    }

    @Test func countsAndCoverage() {
        let range = ByteRange(250, 1000)
        #expect(Self.grid.blockCount(written: 0, of: range) == 0)
        #expect(Self.grid.blockCount(written: 50, of: range) == 1)
        #expect(Self.grid.blockCount(written: 51, of: range) == 2)
        #expect(Self.grid.coveredEnd(blocks: 2, written: 120, of: range) == 370)
        #expect(Self.grid.coveredEnd(blocks: 1, written: 120, of: range) == 300)
        #expect(BlockGrid(fileSize: 64 << 20).blockBytes == 1 << 20)
        #expect(BlockGrid(fileSize: 100_000_000_000).blockBytes == 8 << 20)
        #expect(!BlockGrid.isValid(blockBytes: 3 << 20) && BlockGrid.isValid(blockBytes: 1 << 20))
    }

    // MARK: The hasher

    /// Feeds `data[range]` to a hasher in buffers of `buffer` bytes and checks the blocks it
    /// reports at each buffer's end against CRCs computed directly.
    @Test(arguments: [7, 64, 100, 333])
    func hasherReportsTheCRCsOfExactlyTheWrittenBytes(buffer: Int) {
        let range = ByteRange(250, 1000)
        var hasher = BlockHasher(grid: Self.grid, state: SegmentState(range: range))
        var offset = 250
        while offset < 1000 {
            let end = min(1000, offset + buffer)
            Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[offset..<end]), at: Int64(offset), range: range) }
            offset = end
            #expect(hasher.blocks(written: Int64(offset - 250), range: range) == Self.expected(range: range, writtenEnd: offset))
        }
        // A record taken while later buffers are still queued: the written end is an earlier buffer's.
        let earlier = 250 + buffer
        #expect(hasher.blocks(written: Int64(earlier - 250), range: range) == Self.expected(range: range, writtenEnd: earlier))
    }

    static func expected(range: ByteRange, writtenEnd: Int) -> [UInt32] {
        var blocks: [UInt32] = []
        var index = 0
        while true {
            let block = grid.block(index, of: range)
            guard block.lower < Int64(writtenEnd) else { return blocks }
            blocks.append(crc(data, Int(block.lower)..<min(Int(block.upper), writtenEnd)))
            index += 1
        }
    }

    @Test func aResumedSegmentContinuesFromItsPartialBlock() {
        let range = ByteRange(0, 1000)
        let recorded = Self.expected(range: range, writtenEnd: 450)
        var hasher = BlockHasher(grid: Self.grid, state: SegmentState(range: range, written: 450, blocks: recorded))
        Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[450..<1000]), at: 450, range: range) }
        #expect(hasher.blocks(written: 1000, range: range) == Self.expected(range: range, writtenEnd: 1000))
    }

    @Test func aSegmentWithoutCRCsForItsWrittenBytesRecordsNoMore() {
        let range = ByteRange(0, 1000)
        var hasher = BlockHasher(grid: Self.grid, state: SegmentState(range: range, written: 450, blocks: []))
        Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[450..<1000]), at: 450, range: range) }
        #expect(hasher.blocks(written: 1000, range: range) == [])
        // Bytes handed over at another offset than the hashed end: unanchored too.
        var skipped = BlockHasher(grid: Self.grid, state: SegmentState(range: range))
        Self.data.withUnsafeBytes { skipped.add(UnsafeRawBufferPointer(rebasing: $0[10..<20]), at: 10, range: range) }
        #expect(skipped.blocks(written: 20, range: range) == [])
    }

    @Test func aSplitEndsTheLastBlockAtTheCut() {
        var range = ByteRange(0, 1000)
        var hasher = BlockHasher(grid: Self.grid, state: SegmentState(range: range))
        Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[0..<250]), at: 0, range: range) }
        range = ByteRange(0, 280) // work stealing cut the segment above the bytes received
        Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[250..<280]), at: 250, range: range) }
        #expect(hasher.blocks(written: 280, range: range) == Self.expected(range: range, writtenEnd: 280))
    }

    /// A takeover cuts the segment at the bytes received, mid-block: its last block ends there,
    /// whole now, and its CRC is what was hashed so far (a killed run's journal lacked it).
    @Test func aCutAtTheBytesReceivedEndsTheLastBlockThere() {
        var range = ByteRange(0, 1000)
        var hasher = BlockHasher(grid: Self.grid, state: SegmentState(range: range))
        Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[0..<250]), at: 0, range: range) }
        range = ByteRange(0, 250)
        #expect(hasher.blocks(written: 250, range: range) == Self.expected(range: range, writtenEnd: 250))
        #expect(hasher.blocks(written: 250, range: range).count == 3)
    }

    @Test func rewindingKeepsWhatIsKnownAndFallsBackToABlockStart() {
        let range = ByteRange(0, 1000)
        var hasher = BlockHasher(grid: Self.grid, state: SegmentState(range: range))
        for start in stride(from: 0, to: 600, by: 60) {
            Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[start..<start + 60]), at: Int64(start), range: range) }
        }
        // 540 is a buffer's end (its CRC is marked); 530 is not: back to 500.
        var marked = hasher
        #expect(marked.rewind(to: 540, range: range) == 540)
        #expect(marked.blocks(written: 540, range: range) == Self.expected(range: range, writtenEnd: 540))
        #expect(hasher.rewind(to: 530, range: range) == 500)
        #expect(hasher.blocks(written: 500, range: range) == Self.expected(range: range, writtenEnd: 500))
        Self.data.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[500..<1000]), at: 500, range: range) }
        #expect(hasher.blocks(written: 1000, range: range) == Self.expected(range: range, writtenEnd: 1000))
    }

    // MARK: The resume decision

    static let range = ByteRange(0, 1000)
    static let good = expected(range: range, writtenEnd: 450)

    @Test(arguments: [
        // (what the journal says, CRCs read back, written bytes kept, blocks kept, bytes refused, blocks differing)
        ("all match", SegmentState(range: range, written: 450, blocks: good), good, 450, 5, 0, 0),
        ("the third block differs", SegmentState(range: range, written: 450, blocks: good), Array(good[0..<2]) + [7], 200, 2, 250, 1),
        ("the partial last block differs", SegmentState(range: range, written: 450, blocks: good), Array(good[0..<4]) + [7], 400, 4, 50, 1),
        ("fewer blocks than written bytes: the rest unvouched, not refused", SegmentState(range: range, written: 450, blocks: Array(good[0..<3])),
         Array(good[0..<3]), 300, 3, 0, 0),
        ("written bytes and no CRC at all", SegmentState(range: range, written: 450, blocks: []), [], 0, 0, 450, 0),
        ("a version 1 segment: taken on trust, the CRCs read become its blocks", SegmentState(range: range, written: 450), good, 450, 5, 0, 0),
        ("nothing written", SegmentState(range: range, written: 0, blocks: []), [], 0, 0, 0, 0),
    ] as [(String, SegmentState, [UInt32], Int64, Int, Int64, Int)])
    func resumeKeepsWrittenBytesAsFarAsTheirBlocksMatch(_ name: String, segment: SegmentState, found: [UInt32],
                                                        written: Int64, blocks: Int, refused: Int64, mismatched: Int) {
        let outcome = ResumeBlocks.decide([segment], grid: Self.grid, found: [found])
        #expect(outcome.segments == [SegmentState(range: Self.range, written: written, blocks: Array((segment.blocks ?? found).prefix(blocks)))], "\(name)")
        #expect(outcome.refusedBytes == refused, "\(name)")
        #expect(outcome.mismatchedBlocks == mismatched, "\(name)")
    }

    // MARK: Refetch plans

    @Test func aRefetchPlanKeepsTheCRCsOfTheBytesItKeeps() {
        let old = [
            SegmentState(range: ByteRange(0, 450), written: 450, blocks: Self.expected(range: ByteRange(0, 450), writtenEnd: 450)),
            SegmentState(range: ByteRange(450, 1000), written: 550, blocks: Self.expected(range: ByteRange(450, 1000), writtenEnd: 1000)),
        ]
        // Bytes 120..<180 are fetched again.
        let plan = SegmentState.reopening(size: 1000, extents: [ByteRange(120, 180)])
        let carried = SegmentState.carryingBlocks(into: plan, from: old, grid: Self.grid)
        #expect(carried.coversExactly(size: 1000))
        #expect(carried.map(\.range) == [ByteRange(0, 120), ByteRange(120, 180), ByteRange(180, 200), ByteRange(200, 450),
                                         ByteRange(450, 1000)])
        // [0,120): block 0 whole, block 1 cut at 120 (not vouched); [180,200): mid-block, none;
        // [200,450) and [450,1000): their old blocks.
        #expect(carried[0].blocks == [Self.expected(range: ByteRange(0, 450), writtenEnd: 450)[0]])
        #expect(carried[1].written == 0)
        #expect(carried[2].blocks == [])
        #expect(carried[3].blocks == Array(old[0].blocks?[2...] ?? []))
        #expect(carried[4].blocks == old[1].blocks)
    }

    // MARK: Reading back

    /// `BlockReader` reads a resumed segment's blocks from disk: every block as far as written
    /// when none are recorded, the recorded ones up to and including the first that differs;
    /// and a cancelled download stops it with an error saying the bytes are kept.
    @Test func theReaderStopsAtTheFirstBadBlockAndWhenCancelled() throws {
        let directory = try TemporaryDirectory("rf-blocks")
        let path = directory.file("f.part")
        try Data(Self.data).write(to: URL(fileURLWithPath: path))
        let file = try PartialFile(path: path, readOnly: true)
        let reader = BlockReader(file: file, grid: Self.grid, cancellation: CancellationFlag())
        let range = ByteRange(0, 1000)
        let expected = Self.expected(range: range, writtenEnd: 450)
        #expect(try reader.crcs(of: SegmentState(range: range, written: 450)) == expected)
        var wrong = expected
        wrong[1] ^= 1
        #expect(try reader.crcs(of: SegmentState(range: range, written: 450, blocks: wrong)) == Array(expected[0...1]))

        let cancelled = CancellationFlag()
        cancelled.cancel()
        #expect {
            try BlockReader(file: file, grid: Self.grid, cancellation: cancelled).crcs(of: SegmentState(range: range, written: 450))
        } throws: { error in
            let error = error as? DownloadError
            return error?.code == .cancelled && error?.message.contains("they are kept") == true
        }
    }
}
