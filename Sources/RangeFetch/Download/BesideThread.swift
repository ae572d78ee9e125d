#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// A joinable thread for work that runs beside a download's own thread (its mirror checks) and
/// ends before the download returns: ``join()`` waits for it, so nothing it holds (a loop, easy
/// handles, TLS state) outlives the download. A plain pthread, like ``BlockingWork``'s.
final class BesideThread {
    private var thread: pthread_t?

    /// Starts `body` on a new thread; `nil` when none could be made (resource limits).
    init?(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return nil
        }
        self.thread = thread
    }

    deinit { join() }

    /// Waits until the thread has ended; at once when it has.
    func join() {
        guard let thread else { return }
        self.thread = nil
        pthread_join(thread, nil)
    }

    /// Not generic: a C callback cannot reach a generic context.
    private final class Body {
        private let body: @Sendable () -> Void

        init(_ body: @escaping @Sendable () -> Void) { self.body = body }

        func run() { body() }
    }
}
