#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import Dispatch
import Synchronization

/// Takes a lane's entries from the batch's feed (``BatchRun/take(settling:)``) on a thread of its
/// own, as many as the lane asks for (``ask(_:)``: what it has room for, and as many again
/// ready ahead, ``SmallFileLane/lookahead``), and makes each ready to start
/// (``SmallFileLane/prepare(_:run:prepared:)``: its options, source and probe, or an entry for the
/// workers, which the lane hands on in the list's order): reading a list may wait on its writer (a pipe),
/// and the lane's loop must go on meanwhile with the requests it has. The lane is woken
/// (``CurlLoop/wakeup()``) when an entry comes and the lane said it waits for one
/// (``wantsWake()``), and when the feed ends. A lane busy with requests finds the entries when
/// they end: a wake per entry cost a system call here and a context switch there (20,000 files of
/// 4 KiB: a tenth of the process's CPU time).
final class LaneFeed: @unchecked Sendable {
    /// Entries ready to start, how many asks were answered (with an entry or not) since the lane
    /// last looked, and whether the feed has ended.
    private let state = Mutex<(entries: [SmallFileLane.Ready], answered: Int, closed: Bool)>(([], 0, false))
    /// The lane waits for an entry: the next one to come wakes it.
    private let lanePolls = Atomic(false)
    /// Entries asked for: the thread takes one before each entry it adds.
    private let asked = DispatchSemaphore(value: 0)
    /// Set once, in `init`; taken by ``join()`` (one caller: the lane).
    private var thread: BesideThread?

    /// Starts taking `run`'s entries when asked, waking `loop` when one comes.
    /// - Throws: when no thread could be made for it.
    init(run: BatchRun, loop: CurlLoop) throws(DownloadError) {
        let started = BesideThread { [self] in feed(run, loop: loop) }
        guard let started else {
            throw DownloadError(.fileSystem(errno: EAGAIN), "no thread could be made to read a batch's list (resource limits)")
        }
        thread = started
    }

    /// The entries made ready since the last call, in order, how many asks were answered (each
    /// with an entry ready, or by an entry that ended here), and whether the feed has ended (no
    /// more will come).
    func takeAll() -> (entries: [SmallFileLane.Ready], answered: Int, ended: Bool) {
        state.withLock { state in
            defer {
                state.entries.removeAll(keepingCapacity: true)
                state.answered = 0
            }
            return (state.entries, state.answered, state.closed)
        }
    }

    /// The lane is about to wait for sockets with room for more requests: the next entry made
    /// ready wakes it. `true` when one is ready already (the lane goes on at once instead).
    func wantsWake() -> Bool {
        lanePolls.store(true, ordering: .sequentiallyConsistent)
        // Looked at after the flag is set: an entry added before it is seen here, one added after
        // it sees the flag.
        let ready = state.withLock { !$0.entries.isEmpty || $0.answered > 0 || $0.closed }
        if ready { lanePolls.store(false, ordering: .relaxed) }
        return ready
    }

    /// Asks for `count` more entries.
    func ask(_ count: Int) {
        for _ in 0..<max(0, count) { asked.signal() }
    }

    /// Waits until the thread has ended (it ends when the feed does, or the batch is stopped).
    func join() {
        thread?.join()
        thread = nil
    }

    private func feed(_ run: BatchRun, loop: CurlLoop) {
        var settled: [BatchFileResult] = []
        // The directory the last entry went into (``BatchRun/resolve(_:prepared:)``).
        var prepared: DirectoryHandle?
        defer {
            run.add(settled: &settled)
            state.withLock { $0.closed = true }
            loop.wakeup()
        }
        while true {
            // Asked for one more, or the batch stopped.
            while asked.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
                if run.cancellation.isCancelled { return }
            }
            guard let taken = run.take(settling: &settled) else { return }
            // Counted as a file under way once the lane starts it (``BatchRun/reserveFile()``).
            let entry = SmallFileLane.prepare(taken, run: run, prepared: &prepared)
            state.withLock { state in
                state.answered += 1
                if let entry { state.entries.append(entry) }
            }
            if lanePolls.exchange(false, ordering: .sequentiallyConsistent) { loop.wakeup() }
        }
    }
}
