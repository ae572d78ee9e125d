#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import Dispatch
import Synchronization

/// Files that came whole, written and made durable in groups on a thread of their own: each
/// member's file is created and written (its `write`), then the group flushed
/// (``SyncGroup/flush(_:)``: synced, renamed, their directories synced), then each handed to its
/// `done`. The lane that fetched them (``SmallFileLane``) goes on with the next files meanwhile,
/// and the files it hands over during a flush make the next group. A file is reported done only
/// once it is durable at its final name, so a crash loses at most files not yet reported.
///
/// The line is woken when a group is due (``Wake``), not for every file: on tmpfs a group is
/// flushed in microseconds, and a wake per file cost a context switch each (20,000 files of
/// 4 KiB: about one switch a file). The lane asks after each round of its loop
/// (``wakeIfDue(now:laneIdle:)``); files added while a group is flushed make the next one at once.
final class CommitLine: @unchecked Sendable {
    /// When files added since the line last woke are worth waking it for: enough for a group, the
    /// first of them waiting long enough, or the lane idle (nothing would bring it back soon).
    struct Wake: Equatable, Sendable {
        /// Files that make a group worth waking for.
        static let members = 32
        /// How long the first file added may wait for others, seconds.
        static let linger = 0.002

        /// Files added since the line last woke, and when the first of them was added.
        var pending = 0
        var since = 0.0

        mutating func added(now: Double) {
            if pending == 0 { since = now }
            pending += 1
        }

        /// Whether to wake the line now; if so, the files are counted as handed over.
        /// - Parameter laneIdle: the lane has no request under way (nothing would bring it back soon).
        mutating func isDue(now: Double, laneIdle: Bool) -> Bool {
            guard pending > 0, pending >= Self.members || now - since >= Self.linger || laneIdle else { return false }
            pending = 0
            return true
        }

        /// When the files added and not yet woken for are due, at the latest; `nil` for none.
        var deadline: Double? { pending > 0 ? since + Self.linger : nil }
    }

    /// A file waiting for its group's flush.
    private struct Member: Sendable {
        /// Creates and writes the file, on the line's thread; `nil` when it did not (the closure
        /// dealt with it, and the member is dropped).
        let write: @Sendable () -> Written?
        let destination: String
        /// The bytes `write` holds until it runs.
        let bytes: Int
    }

    /// A file a member's `write` made, and what to call (on the line's thread) once it is in
    /// place and durable (`nil`), or failed; `done` closes it.
    struct Written: Sendable {
        let file: PartialFile
        let done: @Sendable (PartialFile, DownloadError?) -> Void
    }

    private let state = Mutex<(waiting: [Member], closed: Bool, wake: Wake)>(([], false, Wake()))
    /// Signalled when a group is due (``wakeIfDue(now:laneIdle:)``), and when closed.
    private let ready = DispatchSemaphore(value: 0)
    /// Members added and not yet done.
    private let outstanding = Atomic<Int>(0)
    /// Bytes held by members not yet written.
    private let unwritten = Atomic<Int>(0)
    /// Set once, in `init`; taken by ``finish()`` (one caller: the lane).
    private var thread: BesideThread?
    /// The most members one group takes.
    let maximumMembers: Int

    /// - Throws: when no thread could be made for it (resource limits).
    init(maximumMembers: Int = 256) throws(DownloadError) {
        self.maximumMembers = max(1, maximumMembers)
        guard let started = BesideThread({ [self] in drain() }) else {
            throw DownloadError(.fileSystem(errno: EAGAIN), "no thread could be made to sync a batch's files (resource limits)")
        }
        thread = started
    }

    /// Files added and not yet done: each holds a descriptor open, or its bytes.
    var backlog: Int { outstanding.load(ordering: .relaxed) }

    /// Bytes of files added and not yet written: memory the line holds.
    var backlogBytes: Int { unwritten.load(ordering: .relaxed) }

    /// Makes the file `write` creates and writes (on the line's thread) durable at `destination`
    /// with the others flushed with it, then calls its `done` (there too) with the file and its
    /// failure, if any. The file stays open until then (`done` closes it). The line starts on it
    /// once woken (``wakeIfDue(now:laneIdle:)``, ``finish()``), or once it ends the group it flushes.
    /// - Parameter bytes: what `write` holds until it runs (``backlogBytes``).
    func add(to destination: String, bytes: Int, now: Double, write: @escaping @Sendable () -> Written?) {
        outstanding.add(1, ordering: .relaxed)
        unwritten.add(bytes, ordering: .relaxed)
        state.withLock { state in
            state.waiting.append(Member(write: write, destination: destination, bytes: bytes))
            state.wake.added(now: now)
        }
    }

    /// Wakes the line when the files added since it last woke are due (``Wake``).
    /// - Parameter laneIdle: the caller has no request under way.
    /// - Returns: when the files added and not woken for are due: the caller asks again by then.
    func wakeIfDue(now: Double, laneIdle: Bool) -> Double? {
        let (due, deadline) = state.withLock { state in
            (state.wake.isDue(now: now, laneIdle: laneIdle), state.wake.deadline)
        }
        if due { ready.signal() }
        return deadline
    }

    /// Waits until every file added is done, and ends the line's thread.
    func finish() {
        state.withLock { $0.closed = true }
        ready.signal()
        thread?.join()
        thread = nil
    }

    /// The line's thread: group after group, until closed and none is left; it waits to be woken
    /// only when none is waiting.
    private func drain() {
        while true {
            let (group, ended) = state.withLock { state in
                let group = Array(state.waiting.prefix(maximumMembers))
                state.waiting.removeFirst(group.count)
                // Taken: no wake is due for them.
                if state.waiting.isEmpty { state.wake = Wake() }
                return (group, state.closed && state.waiting.isEmpty)
            }
            if group.isEmpty {
                if ended { return }
                ready.wait()
                continue
            }
            var written: [(member: Member, written: Written)] = []
            for member in group {
                let made = member.write()
                unwritten.subtract(member.bytes, ordering: .relaxed)
                if let made {
                    written.append((member, made))
                } else {
                    outstanding.subtract(1, ordering: .relaxed)
                }
            }
            let failures = SyncGroup.flush(written.map { ($0.written.file, $0.member.destination) })
            for ((_, made), failure) in zip(written, failures) {
                made.done(made.file, failure)
                outstanding.subtract(1, ordering: .relaxed)
            }
            if ended { return }
        }
    }
}
