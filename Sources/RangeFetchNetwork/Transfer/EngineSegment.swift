import RangeFetchBase

/// Engine-side record of one segment: its state and the request working on it, if any.
package final class EngineSegment {
    /// Stable for the segment's life; the scheduler refers to segments by it.
    package let id: Int
    package var state: SegmentState
    package var transfer: SegmentTransfer?
    /// Bytes handed to the write queue whose write has not completed yet; they follow
    /// `state.written` in the file and join it when the write completes.
    package var queued: Int64 = 0
    /// Failed tries since this segment last made progress (``RetryBudget/isProgress(gained:rest:)``).
    package var triesWithoutProgress = 0
    /// Tries in a row that ended having brought some bytes, but too few to count as progress.
    package var meagreTries = 0
    /// The most bytes ever written or queued for this segment: a single stream restarts from
    /// zero, so only passing this mark counts as progress.
    package var bestWritten: Int64 = 0
    /// Monotonic time before which it must not be retried.
    package var readyAt: Double = 0
    /// A source whose bytes for this segment failed their `Content-Digest`: its next request
    /// goes to another source when one has room.
    package var distrusted: SourceID?

    /// Metalink pieces inside it that a response delivered whole and that matched their digests
    /// (see ``PieceHasher``); dropped when its bytes are rewound below their end.
    package var provenPieces: [PieceOutcome] = []

    /// The CRCs of its blocks as its bytes are queued; `nil` when the run keeps no journal.
    package var hasher: BlockHasher?

    /// - Parameter grid: the journal's block grid, `nil` when no journal is kept (the state's
    ///   blocks are then dropped: nothing keeps them true).
    package init(id: Int, state: SegmentState, grid: BlockGrid?) {
        self.id = id
        self.state = state
        bestWritten = state.written
        if let grid { hasher = BlockHasher(grid: grid, state: state) } else { self.state.blocks = nil }
    }

    /// The state a record may claim (see ``SegmentState/vouched(unprovenFrom:)``), with the
    /// CRCs of the blocks of its written bytes.
    package func recordState(unprovenFrom: Int64?) -> SegmentState {
        var recorded = state.vouched(unprovenFrom: unprovenFrom)
        if let hasher { recorded.blocks = hasher.blocks(written: recorded.written, range: recorded.range) }
        return recorded
    }

    /// Sets the written bytes back to at most `written` (the bytes after it are not kept): to
    /// where the CRCs of what stays are known, which may be lower (a block's start).
    package func rewind(to written: Int64) {
        state.written = min(state.written, written)
        defer { provenPieces.removeAll { $0.range.upper > state.range.lower + state.written } }
        guard var rewound = hasher else { return }
        hasher = nil
        state.written = rewound.rewind(to: state.range.lower + state.written, range: state.range) - state.range.lower
        hasher = rewound
    }

    /// Books the end of a try whose bytes are kept (queued bytes count: their writes land a
    /// moment later); returns whether it made progress (``RetryBudget/isProgress(gained:rest:)``),
    /// which clears ``triesWithoutProgress``. A try that passed ``bestWritten`` by too little
    /// counts as meagre.
    package func bookTry() -> Bool {
        let reached = state.written + queued
        guard reached > bestWritten else { return false }
        let progressed = RetryBudget.isProgress(gained: reached - bestWritten, rest: state.range.count - bestWritten)
        meagreTries = progressed ? 0 : meagreTries + 1
        bestWritten = reached
        if progressed { triesWithoutProgress = 0 }
        return progressed
    }

    /// The pieces proven in flight whose bytes are all written.
    package var writtenProvenPieces: [Int] {
        provenPieces.filter { $0.range.upper <= state.range.lower + state.written }.map(\.index)
    }

    /// Every byte is in the file.
    package var isComplete: Bool { state.isComplete }

    /// The bytes not yet received (neither written, queued nor buffered).
    package var outstanding: ByteRange {
        let next = state.range.lower + state.written + queued + Int64(transfer?.buffered ?? 0)
        return ByteRange(min(next, state.range.upper), state.range.upper)
    }
}
