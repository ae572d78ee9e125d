import RangeFetchBase
import RangeFetchNetwork

/// How much of each resumed segment's written bytes its recorded block CRCs vouch for, decided
/// from what ``BlockReader`` found on disk, with no I/O.
///
/// A segment's written bytes are kept as far as its recorded blocks match, block by block from
/// its start: from the first block that differs, and past the last block recorded, they are
/// fetched again. A segment whose ``SegmentState/blocks`` is `nil` is taken on trust (a version 1
/// journal, an adopted file: there is no evidence either way); the CRCs found become its blocks.
enum ResumeBlocks {
    /// The segments to resume and what was refused.
    struct Outcome: Equatable {
        var segments: [SegmentState]
        /// Written bytes given up because a recorded CRC differs from the bytes on disk, or
        /// because a segment claims written bytes and records no CRC for any of them.
        var refusedBytes: Int64
        /// Blocks whose CRC differs.
        var mismatchedBlocks: Int
    }

    /// - Parameter found: for each segment, the CRCs of its first blocks as on disk (each block
    ///   as far as written), up to and including the first that differs from the record.
    static func decide(_ segments: [SegmentState], grid: BlockGrid, found: [[UInt32]]) -> Outcome {
        var outcome = Outcome(segments: [], refusedBytes: 0, mismatchedBlocks: 0)
        for (index, segment) in segments.enumerated() {
            let read = index < found.count ? found[index] : []
            let recorded = segment.blocks ?? read
            var good = 0
            while good < recorded.count, good < read.count, recorded[good] == read[good] { good += 1 }
            let kept = grid.coveredEnd(blocks: good, written: segment.written, of: segment.range) - segment.range.lower
            let mismatch = good < recorded.count && good < read.count
            if mismatch { outcome.mismatchedBlocks += 1 }
            if mismatch || (recorded.isEmpty && segment.written > 0) { outcome.refusedBytes += segment.written - kept }
            outcome.segments.append(SegmentState(range: segment.range, written: kept, blocks: Array(recorded.prefix(good))))
        }
        return outcome
    }
}

/// Reads back the blocks of written bytes of resumed segments and computes their CRC-32C
/// (``ResumeBlocks``): every block of a segment with no recorded blocks, else the recorded ones
/// up to the first that differs.
struct BlockReader {
    let file: PartialFile
    let grid: BlockGrid
    let cancellation: CancellationFlag

    func crcs(of segment: SegmentState) throws(DownloadError) -> [UInt32] {
        let count = segment.blocks?.count ?? grid.blockCount(written: segment.written, of: segment.range)
        guard count > 0 else { return [] }
        var found: [UInt32] = []
        try FileDescriptor.withReadBackBuffer { (buffer) throws(DownloadError) in
            for index in 0..<count {
                if cancellation.isCancelled {
                    throw DownloadError(.cancelled, "interrupted while checking the bytes already in \(file.path); they are kept", remedy: .runAgainToResume)
                }
                var crc: UInt32 = 0
                // A short file hands on fewer bytes: the CRC differs.
                _ = try DownloadError.withSystemCalls { () throws(SystemCallError) in
                    try file.handle.readBack(grid.coveredBlock(index, written: segment.written, of: segment.range), into: buffer) { _, bytes in
                        crc = CRC32C.update(crc, bytes)
                    }
                }
                found.append(crc)
                if let recorded = segment.blocks, recorded[index] != crc { break }
            }
        }
        return found
    }
}
