/// The grid of blocks the resume journal records a CRC-32C for: cells of ``blockBytes`` from
/// byte 0, each clipped to the segment it falls in, so a block never spans two segments (whose
/// bytes arrive on different connections). A segment that starts mid-cell (a work-stealing split)
/// starts with a short block.
///
/// Block `i` of a segment `[lower, upper)` is `[max(lower, c + i·B), min(upper, c + (i+1)·B))`
/// where `c` is the start of the cell holding `lower`.
package struct BlockGrid: Sendable, Equatable {
    package let blockBytes: Int64

    /// At most this many blocks per file, so a record of a 100 GB file stays small: the block
    /// doubles from 1 MiB until the file fits.
    package static let maximumBlocks: Int64 = 16384
    package static let minimumBlockBytes: Int64 = 1 << 20

    package init(blockBytes: Int64) {
        precondition(blockBytes > 0, "block size")
        self.blockBytes = blockBytes
    }

    /// The grid for a file of `fileSize` bytes.
    package init(fileSize: Int64) {
        var bytes = Self.minimumBlockBytes
        while fileSize / bytes > Self.maximumBlocks { bytes *= 2 }
        self.init(blockBytes: bytes)
    }

    /// Whether `bytes` is a block size a journal may name: a power of two from 4 KiB to 1 TiB.
    package static func isValid(blockBytes bytes: Int64) -> Bool {
        bytes >= 4096 && bytes <= 1 << 40 && bytes & (bytes - 1) == 0
    }

    private func cellStart(_ offset: Int64) -> Int64 { offset / blockBytes * blockBytes }

    /// Block `index` of `range` (empty, at its end, past its last block).
    package func block(_ index: Int, of range: ByteRange) -> ByteRange {
        let start = cellStart(range.lower) + Int64(index) * blockBytes
        let lower = min(max(range.lower, start), range.upper)
        return ByteRange(lower, max(lower, min(range.upper, start + blockBytes)))
    }

    /// The block of `range` holding file offset `offset` (`range.lower <= offset < range.upper`).
    package func blockIndex(at offset: Int64, of range: ByteRange) -> Int {
        Int((offset - cellStart(range.lower)) / blockBytes)
    }

    /// How many blocks hold the first `written` bytes of `range` (the last possibly in part).
    package func blockCount(written: Int64, of range: ByteRange) -> Int {
        written <= 0 ? 0 : blockIndex(at: range.lower + written - 1, of: range) + 1
    }

    /// The end of the bytes `count` recorded blocks vouch for in a segment with `written` bytes:
    /// the last block counts up to the written end.
    package func coveredEnd(blocks count: Int, written: Int64, of range: ByteRange) -> Int64 {
        count == 0 ? range.lower : min(block(count - 1, of: range).upper, range.lower + written)
    }

    /// The bytes block `index` vouches for in a segment with `written` bytes.
    package func coveredBlock(_ index: Int, written: Int64, of range: ByteRange) -> ByteRange {
        let block = block(index, of: range)
        return ByteRange(block.lower, min(block.upper, range.lower + written))
    }
}
