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
