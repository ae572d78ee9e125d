import Dispatch
import Synchronization

/// Records progress durably off the transfer thread: `fdatasync` the partial file, then write
/// the journal. Data first, record second, so the journal never claims bytes not on disk.
///
/// Submissions while a checkpoint is being written are coalesced: only the newest snapshot is
/// written next. The transfer thread never waits for a disk flush except in ``finish(_:)``.
package final class Checkpointer: Sendable {
    private let file: PartialFile
    private let store: JournalStore
    private let identity: JournalRecord
    private let queue = DispatchQueue(label: "rangefetch.checkpoint")
    private let state = Mutex<State>(State())

    /// What one checkpoint records.
    package struct Snapshot {
        package var segments: [SegmentState]
        /// Mirror bytes among them not spot-checked yet (``JournalRecord/uncheckedMirrorBytes``).
        package var unchecked: [String: [ByteRange]] = [:]

        package init(segments: [SegmentState], unchecked: [String: [ByteRange]] = [:]) {
            self.segments = segments
            self.unchecked = unchecked
        }
    }

    private struct State {
        var pending: Snapshot?
        var scheduled = false
        var failure: SystemCallError?
        /// Bytes recorded by the last completed checkpoint.
        var recordedBytes: Int64 = 0
        /// The metalink pieces proven so far (``JournalRecord/verifiedPieces``).
        var verifiedPieces: JournalRecord.VerifiedPieces?
    }

    /// The grid of the block CRCs the records carry.
    package var blockGrid: BlockGrid? { identity.blockGrid }

    /// Records `pieces` as proven in every record from now on.
    package func noteVerified(_ pieces: JournalRecord.VerifiedPieces?) {
        state.withLock { $0.verifiedPieces = pieces }
    }

    /// - Parameter identity: the record to write, whose segments each checkpoint replaces.
    package init(file: PartialFile, store: JournalStore, identity: JournalRecord) {
        self.file = file
        self.store = store
        self.identity = identity
    }

    /// Queues `segments` (all bytes already passed to `pwrite`) to be recorded soon.
    package func submit(_ segments: [SegmentState], unchecked: [String: [ByteRange]] = [:]) {
        let shouldSchedule = state.withLock { state -> Bool in
            state.pending = Snapshot(segments: segments, unchecked: unchecked)
            guard !state.scheduled else { return false }
            state.scheduled = true
            return true
        }
        guard shouldSchedule else { return }
        queue.async { self.drain() }
    }

    /// Starts writeback of what is written so far, off the transfer thread, so dirty pages do
    /// not pile up until the next checkpoint's `fdatasync`.
    package func startWriteback() {
        queue.async { self.file.startWriteback() }
    }

    /// Drops any checkpoint not yet started and waits for the one being written, so nothing
    /// touches the journal afterwards (call before removing it).
    package func stop() {
        state.withLock { $0.pending = nil }
        queue.sync {}
    }

    /// Waits for queued checkpoints, then durably records `segments`. Throws the first failure
    /// any checkpoint met.
    package func finish(_ segments: [SegmentState], unchecked: [String: [ByteRange]] = [:]) throws(SystemCallError) {
        queue.sync {}
        state.withLock { $0.pending = nil }
        try record(Snapshot(segments: segments, unchecked: unchecked))
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    private func drain() {
        while true {
            let next = state.withLock { state -> Snapshot? in
                guard let pending = state.pending else {
                    state.scheduled = false
                    return nil
                }
                state.pending = nil
                return pending
            }
            guard let next else { return }
            do {
                try record(next)
            } catch {
                state.withLock { if $0.failure == nil { $0.failure = error } }
            }
        }
    }

    private func record(_ snapshot: Snapshot) throws(SystemCallError) {
        try file.synchronize()
        var record = identity
        record.segments = snapshot.segments
        let held = JournalRecord.heldMirrorBytes(snapshot.unchecked, in: snapshot.segments)
        record.uncheckedMirrorBytes = held.isEmpty
            ? nil : Dictionary(uniqueKeysWithValues: held.map { (Redaction.url($0.key), $0.value) })
        record.verifiedPieces = state.withLock { $0.verifiedPieces }
        try store.write(record)
        state.withLock { $0.recordedBytes = record.writtenBytes }
    }
}
