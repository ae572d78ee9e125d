import RangeFetchBase
import RangeFetchNetwork
import Dispatch
import Synchronization

/// The entries a batch's lane hands on to its workers (``SmallFileLane``), first in, first out:
/// a worker waits for the next one until the lane is done and none is left.
final class BatchHandoff: Sendable {
    private let state = Mutex<(entries: [BatchRun.Taken], closed: Bool)>(([], false))
    /// One signal per entry added, and one per worker once closed: each ``next()`` takes one.
    private let ready = DispatchSemaphore(value: 0)

    /// The lanes' loops, woken when a worker ends a file (its room may start another).
    private let lanes = Mutex<[CurlLoop]>([])

    /// Wakes `loop` whenever a worker ends a file.
    func wakes(_ loop: CurlLoop) {
        lanes.withLock { $0.append(loop) }
    }

    /// Stops waking `loop` (its lane has ended: the loop may go, and its connections with it).
    func stopsWaking(_ loop: CurlLoop) {
        lanes.withLock { $0.removeAll { $0 === loop } }
    }

    /// A worker ended a file.
    func workerEnded() {
        for loop in lanes.withLock({ $0 }) { loop.wakeup() }
    }

    /// Hands `taken` on to the next free worker.
    func add(_ taken: BatchRun.Taken) {
        state.withLock { $0.entries.append(taken) }
        ready.signal()
    }

    /// No more entries come: each of the `workers` gets `nil` once none is left.
    func close(workers: Int) {
        state.withLock { $0.closed = true }
        for _ in 0..<workers { ready.signal() }
    }

    /// The next entry, waiting for one; `nil` once closed and none is left. `beforeWaiting` runs
    /// when none is there yet, before the wait.
    func next(beforeWaiting: () -> Void = {}) -> BatchRun.Taken? {
        if ready.wait(timeout: .now()) == .timedOut {
            beforeWaiting()
            ready.wait()
        }
        return state.withLock { state in state.entries.isEmpty ? nil : state.entries.removeFirst() }
    }
}
