/// One piece of the download plan and how much of it is durably written.
///
/// `written` counts bytes from `range.lower` that have been handed to `pwrite`; the journal only
/// records it after `fdatasync`. The journal stores these values as they are.
package struct SegmentState: Sendable, Equatable, Codable {
    package var range: ByteRange
    /// Bytes from `range.lower` already in the partial file.
    package var written: Int64
    /// The CRC-32C of each block (``BlockGrid``) of the written bytes, in order from the
    /// segment's start, the last one's as far as written: what vouches for them on a resume.
    /// `nil`: not known (a version 1 journal, an adopted file, a run that keeps no journal);
    /// fewer than the written bytes need: the bytes past them are not vouched for.
    package var blocks: [UInt32]?

    package init(range: ByteRange, written: Int64 = 0, blocks: [UInt32]? = nil) {
        precondition(written >= 0 && written <= range.count, "written beyond the segment")
        self.range = range
        self.written = written
        self.blocks = blocks
    }

    private enum CodingKeys: String, CodingKey {
        case range, written, blocks
    }

    /// In a journal, ``blocks`` is one string of 8 hex digits per block (absent when `nil`).
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        range = try container.decode(ByteRange.self, forKey: .range)
        written = try container.decode(Int64.self, forKey: .written)
        if let hex = try container.decodeIfPresent(String.self, forKey: .blocks) {
            guard let parsed = Self.blocks(hex: hex) else {
                throw DecodingError.dataCorruptedError(forKey: .blocks, in: container, debugDescription: "blocks must be 8 hex digits per block")
            }
            blocks = parsed
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(range, forKey: .range)
        try container.encode(written, forKey: .written)
        if let blocks { try container.encode(Self.hex(blocks), forKey: .blocks) }
    }

    package static func hex(_ blocks: [UInt32]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(blocks.count * 8)
        for block in blocks {
            for shift in stride(from: 28, through: 0, by: -4) { bytes.append(digits[Int((block >> UInt32(shift)) & 0xF)]) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    package static func blocks(hex: String) -> [UInt32]? {
        let bytes = Array(hex.utf8)
        guard bytes.count % 8 == 0 else { return nil }
        var blocks: [UInt32] = []
        blocks.reserveCapacity(bytes.count / 8)
        var value: UInt32 = 0
        for (index, byte) in bytes.enumerated() {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            if index % 8 == 7 {
                blocks.append(value)
                value = 0
            }
        }
        return blocks
    }

    package var isComplete: Bool { written == range.count }
    /// The bytes still to fetch.
    package var remaining: ByteRange { ByteRange(range.lower + written, range.upper) }

    /// The state a journal record may claim while a response that began at file offset
    /// `unprovenFrom` is not proven yet (its `Content-Digest` is checked only at its end): the
    /// bytes written from there on do not count. `nil`: every written byte counts.
    package func vouched(unprovenFrom: Int64?) -> SegmentState {
        guard let unprovenFrom else { return self }
        var state = self
        state.written = min(written, max(0, unprovenFrom - range.lower))
        return state
    }
}

extension Array where Element == SegmentState {
    /// Total bytes already written across all segments.
    package var writtenBytes: Int64 { reduce(0) { $0 + $1.written } }

    /// The bytes the segments hold, as ranges of the file.
    package var writtenRanges: [ByteRange] {
        compactMap { $0.written > 0 ? ByteRange($0.range.lower, $0.range.lower + $0.written) : nil }
    }

    /// The end of the contiguous prefix `[0, n)` known to be written, given segments that cover
    /// the file exactly.
    package var contiguousPrefix: Int64 {
        var end: Int64 = 0
        for segment in sorted(by: { $0.range.lower < $1.range.lower }) {
            guard segment.range.lower == end else { break }
            end += segment.written
            if !segment.isComplete { break }
        }
        return end
    }

    /// Whether the segments cover `[0, size)` exactly: no gap, no overlap.
    package func coversExactly(size: Int64) -> Bool {
        var end: Int64 = 0
        for segment in sorted(by: { $0.range.lower < $1.range.lower }) {
            guard segment.range.lower == end else { return false }
            end = segment.range.upper
        }
        return end == size
    }
}

extension SegmentState {
    /// The plan of a complete `[0, size)` file whose `extents` must be fetched again: each
    /// (merged) extent a segment with nothing written, the bytes between them complete segments.
    package static func reopening(size: Int64, extents: [ByteRange]) -> [SegmentState] {
        let merged = ByteRange.merged(extents.map { ByteRange(max(0, min($0.lower, size)), max(0, min($0.upper, size))) })
        var states: [SegmentState] = []
        var end: Int64 = 0
        for extent in merged {
            if extent.lower > end { states.append(SegmentState(range: ByteRange(end, extent.lower), written: extent.lower - end)) }
            states.append(SegmentState(range: extent))
            end = extent.upper
        }
        if end < size { states.append(SegmentState(range: ByteRange(end, size), written: size - end)) }
        return states
    }
}

extension SegmentState {
    /// `plan`, a refetch plan of a file whose segments were `old` (all complete), with `old`'s
    /// block CRCs carried over to the plan's complete segments, so a record taken during the
    /// refetch still vouches for the bytes kept. A complete segment is cut where an old segment
    /// starts and at the first block start of an old segment it begins inside of (the bytes
    /// before it are vouched for by no CRC: a resume fetches them again, at most one block);
    /// its last block, when the old one runs past the segment's end, is left out likewise.
    package static func carryingBlocks(into plan: [SegmentState], from old: [SegmentState], grid: BlockGrid) -> [SegmentState] {
        var result: [SegmentState] = []
        for segment in plan {
            guard segment.isComplete, segment.range.count > 0 else {
                result.append(segment)
                continue
            }
            for source in old where source.range.lower < segment.range.upper && segment.range.lower < source.range.upper {
                let lower = max(segment.range.lower, source.range.lower)
                let upper = min(segment.range.upper, source.range.upper)
                guard let blocks = source.blocks else {
                    result.append(SegmentState(range: ByteRange(lower, upper), written: upper - lower))
                    continue
                }
                var index = grid.blockIndex(at: lower, of: source.range)
                var start = lower
                if grid.block(index, of: source.range).lower != lower {
                    start = min(grid.block(index, of: source.range).upper, upper)
                    result.append(SegmentState(range: ByteRange(lower, start), written: start - lower, blocks: []))
                    index += 1
                }
                guard start < upper else { continue }
                var carried: [UInt32] = []
                let covered = grid.blockCount(written: source.written, of: source.range)
                while index < blocks.count, index < covered, grid.block(index, of: source.range).upper <= upper,
                      grid.block(index, of: source.range).upper <= source.range.lower + source.written {
                    carried.append(blocks[index])
                    index += 1
                }
                result.append(SegmentState(range: ByteRange(start, upper), written: upper - start, blocks: carried))
            }
        }
        return result
    }
}
