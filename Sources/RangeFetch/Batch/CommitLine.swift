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
final class CommitLine: @unchecked Sendable {
    /// A file waiting for its group's flush.
    private struct Member: Sendable {
        /// Creates and writes the file, on the line's thread; `nil` when it could not (the
        /// closure dealt with it, and the member is dropped).
        let write: @Sendable () -> PartialFile?
        let destination: String
        /// The bytes `write` holds until it runs.
        let bytes: Int
        /// Called on the line's thread, with the file, once it is in place and durable (`nil`),
        /// or failed.
        let done: @Sendable (PartialFile, DownloadError?) -> Void
    }

    private let state = Mutex<(waiting: [Member], closed: Bool)>(([], false))
    /// One signal per member added, and one when closed.
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
    /// with the others flushed with it, then calls `done` (there too) with the file and its
    /// failure, if any. The file stays open until then (`done` closes it).
    /// - Parameter bytes: what `write` holds until it runs (``backlogBytes``).
    func add(to destination: String, bytes: Int, write: @escaping @Sendable () -> PartialFile?,
             done: @escaping @Sendable (PartialFile, DownloadError?) -> Void) {
        outstanding.add(1, ordering: .relaxed)
        unwritten.add(bytes, ordering: .relaxed)
        state.withLock { $0.waiting.append(Member(write: write, destination: destination, bytes: bytes, done: done)) }
        ready.signal()
    }

    /// Waits until every file added is done, and ends the line's thread.
    func finish() {
        state.withLock { $0.closed = true }
        ready.signal()
        thread?.join()
        thread = nil
    }

    /// The line's thread: group after group, until closed and none is left.
    private func drain() {
        while true {
            ready.wait()
            let (group, ended) = state.withLock { state in
                let group = Array(state.waiting.prefix(maximumMembers))
                state.waiting.removeFirst(group.count)
                return (group, state.closed && state.waiting.isEmpty)
            }
            var written: [(member: Member, file: PartialFile)] = []
            for member in group {
                let file = member.write()
                unwritten.subtract(member.bytes, ordering: .relaxed)
                if let file {
                    written.append((member, file))
                } else {
                    outstanding.subtract(1, ordering: .relaxed)
                }
            }
            let failures = SyncGroup.flush(written.map { ($0.file, $0.member.destination) })
            for ((member, file), failure) in zip(written, failures) {
                member.done(file, failure)
                outstanding.subtract(1, ordering: .relaxed)
            }
            if ended { return }
        }
    }
}
