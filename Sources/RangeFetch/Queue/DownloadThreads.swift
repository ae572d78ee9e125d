#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import Synchronization

/// A queue's download threads. Each download runs on a thread of its own, started at once by
/// the call that starts it: no thread of Swift's cooperative pool is needed to start, run or end
/// a download, so a caller that blocks the pool (a synchronous wait, a test polling) cannot stall
/// the queue. (Through a `Task`, a download waited for a pool thread to start, and again to say
/// it ended: on 2 cores, two blocked pool threads stalled every download.)
///
/// Every thread is joined, as ``BlockingWork`` joins its own: one that has ended is joined by the
/// next thread to start, and ``joinAll()`` joins the rest once every body has returned. A process
/// that exits after ``joinAll()`` finds no thread still inside libcurl or OpenSSL.
final class DownloadThreads: Sendable {
    private struct State {
        /// Bodies started and not yet returned.
        var running = 0
        /// Threads whose body returned, not joined yet.
        var ended: [pthread_t] = []
        /// Callers of ``joinAll()`` waiting for `running` to reach 0.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Runs `body` on a new thread, `niceness` lower in CPU priority than the process's other
    /// threads when above 0. When no thread can be made (resource limits) it runs as a detached
    /// task rather than never.
    func start(niceness: Int32, _ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.running += 1 }
        let launched = BlockingWork.Launch.thread { [self] in
            joinEnded()
            if niceness > 0 { BlockingWork.lowerThreadPriority(by: niceness) }
            body()
            finished(thread: pthread_self())
        }
        if !launched {
            Task.detached { [self] in
                body()
                finished(thread: nil)
            }
        }
    }

    /// Waits until every body started has returned, then joins their threads.
    func joinAll() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.running == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
        joinEnded()
    }

    /// Joins the threads whose body has returned (each is exiting, or has).
    private func joinEnded() {
        let threads = state.withLock { state in
            defer { state.ended = [] }
            return state.ended
        }
        for thread in threads { pthread_join(thread, nil) }
    }

    /// A body returned on `thread` (`nil`: it ran as a task).
    private func finished(thread: pthread_t?) {
        let waiters = state.withLock { state in
            if let thread { state.ended.append(thread) }
            state.running -= 1
            guard state.running == 0 else { return [CheckedContinuation<Void, Never>]() }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
