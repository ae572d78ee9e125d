import RangeFetchBase

/// The segments of one download as the engine works on them: where each stands, the bytes
/// queued for writing, and the planned pieces not added yet (a stream's).
package final class SegmentBook {
    /// In the order they were added: the plan's, then split tails and later pieces.
    package private(set) var segments: [EngineSegment]
    private var byID: [Int: EngineSegment] = [:]
    private var nextID: Int
    /// Pieces still to be added (``EngineConfiguration/laterPieces``).
    private var laterPieces: StreamPlan?

    /// The journal's block grid (``EngineConfiguration/blockGrid``).
    private let grid: BlockGrid?
    /// Where a joining source's cuts land (``CutAlignment``).
    private let alignment: CutAlignment

    package init(states: [SegmentState], laterPieces: StreamPlan?, grid: BlockGrid? = nil, alignment: CutAlignment = CutAlignment()) {
        self.grid = grid
        self.alignment = alignment
        segments = states.enumerated().map { EngineSegment(id: $0.offset, state: $0.element, grid: grid) }
        nextID = segments.count
        self.laterPieces = laterPieces
        for segment in segments { byID[segment.id] = segment }
    }

    /// The book of a download's plan: its segments, later pieces, block grid and cut alignment.
    package convenience init(_ configuration: EngineConfiguration) {
        self.init(states: configuration.segments, laterPieces: configuration.laterPieces, grid: configuration.blockGrid,
                  alignment: configuration.cutAlignment)
    }

    package subscript(id: Int) -> EngineSegment? { byID[id] }

    /// Segment states in file order, with the CRCs of their written blocks.
    package var states: [SegmentState] {
        segments.map { $0.recordState(unprovenFrom: nil) }.sorted { $0.range.lower < $1.range.lower }
    }

    /// Segment states as a journal record, a digest following the prefix or a stream may take
    /// them, in file order: a segment whose request carries a `Content-Digest` not checked yet
    /// counts only up to that request's first byte, and one whose request is hashing a metalink
    /// piece only up to that piece's first byte, so nothing recorded or hashed is a byte a
    /// mismatch would reject (see ``SegmentTransfer/unvouchedFrom``).
    package var vouchedStates: [SegmentState] {
        segments.map { $0.state.vouched(unprovenFrom: $0.transfer?.unvouchedFrom) }.sorted { $0.range.lower < $1.range.lower }
    }

    /// ``vouchedStates`` with the CRCs of their written blocks: what a journal record claims.
    package var recordedStates: [SegmentState] {
        segments.map { $0.recordState(unprovenFrom: $0.transfer?.unvouchedFrom) }.sorted { $0.range.lower < $1.range.lower }
    }

    /// Bytes of the file received: written, queued for writing or buffered by a request.
    package var receivedBytes: Int64 {
        segments.reduce(0) { $0 + $1.state.written + $1.queued + Int64($1.transfer?.buffered ?? 0) }
    }

    /// Every byte of every segment is in the file and no piece waits to be added.
    package var isComplete: Bool { segments.allSatisfy(\.isComplete) && laterPieces?.isExhausted != false }

    /// No write is queued for any segment.
    package var writesLanded: Bool { segments.allSatisfy { $0.queued == 0 } }

    /// Segments with bytes to fetch and no request working on them.
    package var waiting: [EngineSegment] { segments.filter { $0.transfer == nil && !$0.isComplete } }

    /// A new segment for `range` (a split's tail, a later piece).
    @discardableResult
    package func add(_ range: ByteRange) -> EngineSegment {
        let segment = EngineSegment(id: nextID, state: SegmentState(range: range), grid: grid)
        nextID += 1
        segments.append(segment)
        byID[segment.id] = segment
        return segment
    }

    /// Work for `sources` that joined mid-run (mirrors agreed while the download runs): while
    /// fewer than `share` segments wait, the running segment with the most bytes still to come
    /// is cut in half (each half at least `minimumBytes`), its tail left waiting; a segment each
    /// is returned for the engine to start at once. A source not measured yet is picked first,
    /// so a late mirror takes a range at once (one connection more than the count until a
    /// request ends), and the other tails as the connections cut short come free: its share of
    /// the connections without the count growing. A request whose `Content-Digest` is still to
    /// be checked (or may be, ``SegmentTransfer/mayBeCut(_:)``) is never cut, as
    /// ``TransferEngine`` never splits one.
    package func forJoining(_ sources: Int, share: Int, minimumBytes: Int64, digests: DigestSources, now: Double) -> [EngineSegment] {
        guard sources > 0 else { return [] }
        var startable: [EngineSegment] { waiting.filter { !$0.outstanding.isEmpty && $0.readyAt <= now } }
        while startable.count < max(share, sources) {
            let running = segments.filter { $0.transfer?.mayBeCut(digests) == true }
            guard let largest = running.max(by: { $0.outstanding.count < $1.outstanding.count }),
                  largest.outstanding.count / 2 >= max(minimumBytes, 1) else { break }
            // On a piece boundary or the write alignment, as the scheduler's splits are.
            let rest = largest.outstanding
            let cut = alignment.cut(rest.lower + rest.count / 2, lower: rest.lower, upper: rest.upper)
            add(ByteRange(cut, largest.state.range.upper))
            largest.state.range.upper = cut
        }
        return Array(startable.prefix(sources))
    }

    /// Adds the planned pieces that start below `limit`, keeping no more segments waiting for a
    /// connection than `connections`: enough for every connection, never the whole plan.
    package func addLaterPieces(below limit: Int64, connections: Int) {
        guard laterPieces != nil else { return }
        let room = connections - waiting.count
        guard room > 0, let pieces = laterPieces?.pieces(below: limit, atMost: room) else { return }
        for range in pieces { add(range) }
    }

    /// Counts finished writes as written; returns the first failed write (a full disk, an I/O
    /// error), whose bytes stay unwritten.
    package func credit(_ completions: [WriteQueue.Completion]) -> SystemCallError? {
        var failure: SystemCallError?
        for completion in completions {
            guard let segment = byID[completion.token] else { continue }
            segment.queued -= Int64(completion.bytes)
            if let error = completion.error {
                failure = failure ?? error
            } else {
                segment.state.written += Int64(completion.bytes)
                segment.hasher?.forgetMarks(below: segment.state.range.lower + segment.state.written)
            }
        }
        return failure
    }

    /// What the scheduler sees: the segments with bytes to fetch, and their requests (those
    /// that may not be cut proven only whole, ``SegmentTransfer/mayBeCut(_:)``; `bytesWaiting`
    /// asked of those that have delivered nothing yet).
    package func schedulerView(digests: DigestSources, bytesWaiting: (SegmentTransfer) -> Bool) -> [SchedulerSegment] {
        segments.filter { !$0.isComplete }.map { segment in
            let transfer = segment.transfer.map {
                SchedulerTransfer(id: $0.id, startedAt: $0.startedAt, receivedBytes: $0.bytesReceived, firstByteAt: $0.firstByteAt,
                                  provenOnlyWhole: !$0.mayBeCut(digests), bytesWaiting: $0.bytesReceived == 0 && bytesWaiting($0))
            }
            return SchedulerSegment(id: segment.id, outstanding: segment.outstanding, transfer: transfer, readyAt: segment.readyAt)
        }
    }
}
