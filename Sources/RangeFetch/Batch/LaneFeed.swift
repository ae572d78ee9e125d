#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import Dispatch
import Synchronization

/// Takes a lane's entries from the batch's feed (``BatchRun/take(settling:)``) on a thread of its
/// own, as many as the lane asks for (``ask(_:)``: what it could start now, so no entry is taken
/// before a file could start, as a worker takes them), and makes each ready to start
/// (``SmallFileLane/prepare(_:run:prepared:)``: its options, source and probe; an entry the lane
/// does not take goes to the workers from here): reading a list may wait on its writer (a pipe),
/// and the lane's loop must go on meanwhile with the requests it has. The lane is woken
/// (``CurlLoop/wakeup()``) when an entry comes to an empty queue, and when the feed ends.
final class LaneFeed: @unchecked Sendable {
    /// Probes ready to start, how many asks were answered (with a probe or not) since the lane
    /// last looked, and whether the feed has ended.
    private let state = Mutex<(flights: [SmallFileLane.Flight], answered: Int, closed: Bool)>(([], 0, false))
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

    /// The probes made ready since the last call, how many asks were answered (each answered with
    /// a probe, or by an entry handed on or ended), and whether the feed has ended (no more will
    /// come).
    func takeAll() -> (flights: [SmallFileLane.Flight], answered: Int, ended: Bool) {
        state.withLock { state in
            defer {
                state.flights.removeAll(keepingCapacity: true)
                state.answered = 0
            }
            return (state.flights, state.answered, state.closed)
        }
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
            // Counted from here: as the lane's file, a worker's, or one that ended already.
            run.filesActive.add(1, ordering: .relaxed)
            let flight = SmallFileLane.prepare(taken, run: run, prepared: &prepared)
            let wakes = state.withLock { state in
                state.answered += 1
                if let flight { state.flights.append(flight) }
                return state.flights.count <= 1
            }
            if wakes { loop.wakeup() }
        }
    }
}
