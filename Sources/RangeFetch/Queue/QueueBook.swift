import RangeFetchBase
import RangeFetchNetwork

/// The queue's decisions as a pure value: which downloads wait, run, are paused or have ended,
/// in what order, and what the runner must do after each operation (aria2's `RequestGroupMan`
/// is the model). It takes operations and the ends of running downloads, and returns actions;
/// it never touches a thread, a file or the network, so it is tested as a table.
///
/// | operation                   | waiting   | active                                        | paused    | failed    | complete  |
/// |-----------------------------|-----------|-----------------------------------------------|-----------|-----------|-----------|
/// | ``pause(_:)``               | paused    | stop; paused once it has ended                | (nothing) | refused   | refused   |
/// | ``resume(_:)``              | (nothing) | a pause asked becomes "wait again" when it ends | waiting | waiting   | refused   |
/// | ``remove(_:keepingFiles:)`` | removed   | stop; removed once it has ended               | removed   | removed   | forgotten, file kept |
/// | ``move(_:to:)``             | moved     | moved                                         | moved     | moved     | refused   |
///
/// A removed download is forgotten: later operations on its id are refused as unknown.
///
/// After every operation the first waiting downloads in order start while fewer than
/// ``maximumActive`` run. A download asked to stop still counts as running until it has ended:
/// "paused" is said only once no more bytes arrive. Lowering ``maximumActive`` stops the last
/// running downloads in order, which go back to waiting and resume from their journals.
struct QueueBook: Sendable, Equatable {
    /// What the runner must do.
    enum Action: Sendable, Equatable {
        /// Start (or resume) the download.
        case start(DownloadID)
        /// Stop the running download: its requests end and its journal is written.
        case stop(DownloadID)
        /// Delete the download's partial file and journal (it was removed).
        case discard(DownloadID)
    }

    /// How a running download ended.
    enum End: Sendable, Equatable {
        case finished
        case failed
        /// It stopped because it was asked to (or was interrupted).
        case stopped
    }

    /// Why a running download is being stopped.
    private enum StopReason: Sendable, Equatable {
        case pause
        case remove(keepingFiles: Bool)
        /// Back to waiting: more run than ``maximumActive`` allows.
        case requeue
    }

    private struct Entry: Sendable, Equatable {
        var status: QueueStatus
        var stopping: StopReason?
    }

    /// Downloads that run at once.
    private(set) var maximumActive: Int
    /// Every download not removed, in queue order.
    private(set) var order: [DownloadID] = []
    private var entries: [DownloadID: Entry] = [:]
    private var nextID: UInt64 = 1

    init(maximumActive: Int) {
        self.maximumActive = max(1, maximumActive)
    }

    /// Where `id` stands; `nil` for an id the queue never gave (or one removed and forgotten).
    func status(_ id: DownloadID) -> QueueStatus? { entries[id]?.status }

    /// Whether `id` runs and has been asked to stop.
    func isStopping(_ id: DownloadID) -> Bool { entries[id]?.stopping != nil }

    /// The downloads running now (stopping ones included), in queue order.
    var active: [DownloadID] { order.filter { entries[$0]?.status == .active } }

    /// Adds a download at the end (or at `position`), waiting or paused; returns its id.
    mutating func add(paused: Bool = false, at position: Int? = nil) -> (DownloadID, [Action]) {
        let id = DownloadID(nextID)
        nextID += 1
        entries[id] = Entry(status: paused ? .paused : .waiting)
        order.insert(id, at: min(max(0, position ?? order.count), order.count))
        return (id, fill())
    }

    mutating func pause(_ id: DownloadID) throws(QueueError) -> [Action] {
        let entry = try existing(id)
        switch entry.status {
        case .waiting:
            entries[id]?.status = .paused
            return fill()
        case .active:
            let wasStopping = entry.stopping != nil
            if case .remove = entry.stopping { throw QueueError(id, "is being removed; it cannot be paused") }
            entries[id]?.stopping = .pause
            return wasStopping ? [] : [.stop(id)]
        case .paused:
            return []
        case .complete, .failed:
            throw QueueError(id, "is \(entry.status); only a waiting or active download can be paused")
        }
    }

    mutating func resume(_ id: DownloadID) throws(QueueError) -> [Action] {
        let entry = try existing(id)
        switch entry.status {
        case .paused, .failed:
            entries[id]?.status = .waiting
            return fill()
        case .active:
            // A pause or requeue not yet landed is withdrawn; the stop already asked still lands,
            // and the download then waits and starts again from its journal.
            if entry.stopping == .pause { entries[id]?.stopping = .requeue }
            return []
        case .waiting:
            return []
        case .complete:
            throw QueueError(id, "is complete; there is nothing to resume")
        }
    }

    /// Removes `id`: its partial file and journal are deleted unless `keepingFiles` (a complete
    /// file is always kept). The id is forgotten once the download has stopped.
    mutating func remove(_ id: DownloadID, keepingFiles: Bool = false) throws(QueueError) -> [Action] {
        let entry = try existing(id)
        switch entry.status {
        case .active:
            let wasStopping = entry.stopping != nil
            entries[id]?.stopping = .remove(keepingFiles: keepingFiles)
            return wasStopping ? [] : [.stop(id)]
        case .waiting, .paused, .failed:
            forget(id)
            return (keepingFiles ? [] : [.discard(id)]) + fill()
        case .complete:
            forget(id)
            return []
        }
    }

    /// Moves `id` to `position` in the queue order (clamped); the first waiting downloads start.
    mutating func move(_ id: DownloadID, to position: Int) throws(QueueError) -> [Action] {
        let entry = try existing(id)
        guard entry.status != .complete else {
            throw QueueError(id, "is complete; only an unfinished download can be moved")
        }
        order.removeAll { $0 == id }
        order.insert(id, at: min(max(0, position), order.count))
        return fill()
    }

    /// Changes how many downloads run at once (at least 1): more start at once, or the last
    /// running ones in queue order are stopped and wait again.
    mutating func setMaximumActive(_ count: Int) -> [Action] {
        maximumActive = max(1, count)
        var actions: [Action] = []
        let running = active.filter { entries[$0]?.stopping == nil }
        for id in running.dropFirst(maximumActive) {
            entries[id]?.stopping = .requeue
            actions.append(.stop(id))
        }
        return actions + fill()
    }

    /// The running download `id` ended; what it becomes follows why it was stopped, if it was.
    mutating func ended(_ id: DownloadID, _ end: End) -> [Action] {
        guard let entry = entries[id], entry.status == .active else { return [] }
        var actions: [Action] = []
        switch (end, entry.stopping) {
        case (.finished, _):
            entries[id] = Entry(status: .complete)
        case (_, .remove(let keepingFiles)):
            forget(id)
            if !keepingFiles { actions.append(.discard(id)) }
        case (.failed, _):
            entries[id] = Entry(status: .failed)
        case (.stopped, .pause), (.stopped, nil):
            // Stopped without being asked (the process is stopping): kept paused, as on disk.
            entries[id] = Entry(status: .paused)
        case (.stopped, .requeue):
            entries[id] = Entry(status: .waiting)
        }
        return actions + fill()
    }

    /// Starts the first waiting downloads while fewer than ``maximumActive`` run.
    private mutating func fill() -> [Action] {
        var room = maximumActive - active.count
        var actions: [Action] = []
        for id in order where room > 0 && entries[id]?.status == .waiting {
            entries[id]?.status = .active
            actions.append(.start(id))
            room -= 1
        }
        return actions
    }

    private func existing(_ id: DownloadID) throws(QueueError) -> Entry {
        guard let entry = entries[id] else { throw QueueError(id, "is not in the queue") }
        return entry
    }

    private mutating func forget(_ id: DownloadID) {
        entries[id] = nil
        order.removeAll { $0 == id }
    }
}
