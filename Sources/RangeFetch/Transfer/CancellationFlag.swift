import Synchronization

/// A one-way "stop now" switch shared between async callers and the engine thread.
///
/// Setting it also wakes the engine's poll loop so it notices at once.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    private let waker = Mutex<CurlMulti?>(nil)

    var isCancelled: Bool { flag.load(ordering: .relaxed) }

    func cancel() {
        flag.store(true, ordering: .relaxed)
        waker.withLock { $0?.wakeup() }
    }

    /// The multi handle to wake on cancel while a transfer loop runs; `nil` when it ends.
    func attach(_ multi: CurlMulti?) {
        waker.withLock { $0 = multi }
        if isCancelled { multi?.wakeup() }
    }
}
