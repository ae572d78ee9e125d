import Synchronization

/// The calls being answered right now, over HTTP or a WebSocket: counted from the moment a
/// call is read until its answer is flushed, so a closing server can wait for them. Without
/// it, `aria2.forceShutdown` closed the event loop under its own answer ("Remote end closed
/// connection without response").
final class AnswersInFlight: Sendable {
    private let count = Mutex(0)

    /// One call has been read; its `end()` must follow once its answer is written (or failed).
    func begin() {
        count.withLock { $0 += 1 }
    }

    func end() {
        count.withLock { $0 -= 1 }
    }

    /// Returns once no call is being answered, or after `limit` (a call that never ends, e.g. a
    /// pause of a download that does not stop, must not keep the daemon from exiting).
    func drained(within limit: Duration) async {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while count.withLock({ $0 }) > 0, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
