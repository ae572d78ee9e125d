import RangeFetchBase

/// The CRC-32C of each block (``BlockGrid``) of one segment, computed as its bytes are handed to
/// the writer, in order from the segment's start: what a journal record lists for the bytes it
/// claims (``SegmentState/blocks``).
///
/// Bytes are hashed when queued, before their write lands, so the hasher runs ahead of
/// `written`; ``blocks(written:range:)`` gives the CRCs of exactly the written bytes (the last
/// block's as far as it is written, kept at every buffer's end until its write lands).
///
/// A segment resumed with fewer recorded blocks than its written bytes need is *unanchored*: the
/// bytes after them cannot be vouched for, so nothing more is recorded for it.
package struct BlockHasher {
    package let grid: BlockGrid
    /// CRCs of the blocks whose end the hashed bytes reached.
    private var finished: [UInt32]
    /// Absolute end of the bytes hashed.
    private var end: Int64
    /// The CRC of the bytes hashed in the block holding ``end``.
    private var current: UInt32 = 0
    private var anchored: Bool
    /// The current block's CRC at each queued buffer's end, for records taken before the block ends.
    private var marks: [(end: Int64, crc: UInt32)] = []

    /// Continues from `state`'s written bytes and recorded blocks (`nil` blocks: none).
    package init(grid: BlockGrid, state: SegmentState) {
        self.grid = grid
        let blocks = state.blocks ?? []
        let writtenEnd = state.range.lower + state.written
        anchored = grid.coveredEnd(blocks: blocks.count, written: state.written, of: state.range) == writtenEnd
            && blocks.count <= grid.blockCount(written: state.written, of: state.range)
        end = writtenEnd
        finished = blocks
        if anchored, let last = blocks.last, grid.block(blocks.count - 1, of: state.range).upper > writtenEnd {
            finished.removeLast()
            current = last
        }
    }

    /// Hashes `bytes`, the segment's next bytes, at file offset `offset` (anything but the end of
    /// those hashed so far leaves the segment unanchored); `range` is the segment's range now (a
    /// split may have lowered its end, never below the bytes received).
    package mutating func add(_ bytes: UnsafeRawBufferPointer, at offset: Int64, range: ByteRange) {
        guard anchored, offset == end else {
            anchored = false
            return
        }
        var rest = bytes
        var midBlock = false
        while !rest.isEmpty {
            let blockEnd = grid.block(grid.blockIndex(at: end, of: range), of: range).upper
            let count = Int(min(Int64(rest.count), blockEnd - end))
            guard count > 0 else { anchored = false; return } // bytes past the segment: never recorded
            current = CRC32C.update(current, UnsafeRawBufferPointer(rebasing: rest[0..<count]))
            end += Int64(count)
            rest = UnsafeRawBufferPointer(rebasing: rest[count...])
            midBlock = end < blockEnd
            if !midBlock {
                finished.append(current)
                current = 0
            }
        }
        if midBlock { marks.append((end, current)) }
    }

    /// The CRCs vouching for the first `written` bytes of `range`: every block wholly written,
    /// then the last one's as far as written when that is known. Fewer when not (a resume
    /// fetches the bytes past them again).
    package func blocks(written: Int64, range: ByteRange) -> [UInt32] {
        let cover = range.lower + written
        let count = grid.blockCount(written: written, of: range)
        guard count > 0 else { return [] }
        let lastIsWhole = grid.block(count - 1, of: range).upper <= cover
        let whole = lastIsWhole ? count : count - 1
        guard finished.count >= whole else {
            // The segment was cut at the hashed end, mid-block (a takeover cuts at the bytes
            // received): that block ends there now, and the CRC hashed so far is its whole CRC.
            if anchored, lastIsWhole, finished.count == whole - 1, end == cover { return finished + [current] }
            return finished
        }
        var result = Array(finished[0..<whole])
        guard !lastIsWhole, anchored else { return result }
        if finished.count == whole, end == cover {
            result.append(current)
        } else if let mark = marks.last(where: { $0.end == cover }) {
            result.append(mark.crc)
        }
        return result
    }

    /// Forgets the marks below `offset` (the written end): no record needs them any more.
    package mutating func forgetMarks(below offset: Int64) {
        marks.removeAll { $0.end < offset }
    }

    /// Goes back to the written end `offset` (the bytes after it are dropped) and returns where
    /// the segment's written bytes must end now: `offset` when the CRC up to it is known, else
    /// the start of its block.
    package mutating func rewind(to offset: Int64, range: ByteRange) -> Int64 {
        guard anchored else { return offset }
        let written = offset - range.lower
        let recorded = blocks(written: written, range: range)
        let covered = grid.coveredEnd(blocks: recorded.count, written: written, of: range)
        if covered == offset, let last = recorded.last, grid.block(recorded.count - 1, of: range).upper > offset {
            finished = Array(recorded.dropLast())
            current = last
        } else {
            finished = recorded
            current = 0
        }
        end = covered
        marks.removeAll { $0.end > covered }
        return covered
    }
}
