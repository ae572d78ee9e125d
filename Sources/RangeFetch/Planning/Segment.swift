/// One piece of the download plan and how much of it is durably written.
///
/// `written` counts bytes from `range.lower` that have been handed to `pwrite`; the journal only
/// records it after `fdatasync`. The journal stores these values as they are.
struct SegmentState: Sendable, Equatable, Codable {
    var range: ByteRange
    /// Bytes from `range.lower` already in the partial file.
    var written: Int64

    init(range: ByteRange, written: Int64 = 0) {
        precondition(written >= 0 && written <= range.count, "written beyond the segment")
        self.range = range
        self.written = written
    }

    var isComplete: Bool { written == range.count }
    /// The bytes still to fetch.
    var remaining: ByteRange { ByteRange(range.lower + written, range.upper) }

    /// The state a journal record may claim while a response that began at file offset
    /// `unprovenFrom` is not proven yet (its `Content-Digest` is checked only at its end): the
    /// bytes written from there on do not count. `nil`: every written byte counts.
    func vouched(unprovenFrom: Int64?) -> SegmentState {
        guard let unprovenFrom else { return self }
        var state = self
        state.written = min(written, max(0, unprovenFrom - range.lower))
        return state
    }
}

extension Array where Element == SegmentState {
    /// Total bytes already written across all segments.
    var writtenBytes: Int64 { reduce(0) { $0 + $1.written } }

    /// The end of the contiguous prefix `[0, n)` known to be written, given segments that cover
    /// the file exactly.
    var contiguousPrefix: Int64 {
        var end: Int64 = 0
        for segment in sorted(by: { $0.range.lower < $1.range.lower }) {
            guard segment.range.lower == end else { break }
            end += segment.written
            if !segment.isComplete { break }
        }
        return end
    }

    /// Whether the segments cover `[0, size)` exactly: no gap, no overlap.
    func coversExactly(size: Int64) -> Bool {
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
    static func reopening(size: Int64, extents: [ByteRange]) -> [SegmentState] {
        var merged: [ByteRange] = []
        for extent in extents.sorted(by: { $0.lower < $1.lower }) {
            let clamped = ByteRange(max(0, min(extent.lower, size)), max(0, min(extent.upper, size)))
            guard clamped.count > 0 else { continue }
            if let last = merged.last, clamped.lower <= last.upper {
                merged[merged.count - 1] = ByteRange(last.lower, max(last.upper, clamped.upper))
            } else {
                merged.append(clamped)
            }
        }
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
