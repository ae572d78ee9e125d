import Synchronization

/// A one-way "stop now" switch shared between async callers and engine threads (one download's,
/// or every worker of a batch).
///
/// Setting it also wakes every attached poll loop so each notices at once.
package final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    private let wakers = Mutex<[ObjectIdentifier: any CancellationWaker]>([:])

    package var isCancelled: Bool { flag.load(ordering: .relaxed) }

    package func cancel() {
        flag.store(true, ordering: .relaxed)
        wakers.withLock { for multi in $0.values { multi.wakeup() } }
    }

    /// Wakes `multi` on cancel until ``detach(_:)``.
    package func attach(_ multi: any CancellationWaker) {
        wakers.withLock { $0[ObjectIdentifier(multi)] = multi }
        if isCancelled { multi.wakeup() }
    }

    package func detach(_ multi: any CancellationWaker) {
        _ = wakers.withLock { $0.removeValue(forKey: ObjectIdentifier(multi)) }
    }

    package init() {}
}

/// A loop that waits and can be woken from any thread (``CurlLoop``), so a cancel is noticed at once.
package protocol CancellationWaker: AnyObject, Sendable {
    /// Interrupts a wait in progress; safe from any thread.
    func wakeup()
}
