#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// Runs blocking work (libcurl loops, file hashing) on a dedicated thread so it never occupies
/// the cooperative pool; task cancellation trips `cancellation`.
///
/// The thread is joined before the result is handed back: by then the work's closure and
/// everything it held (loop and easy handles, TLS connections, digest contexts) are released,
/// and the thread's own exit handlers (OpenSSL frees its per-thread state there) have run. A
/// caller that then returns from `main` and calls `exit` finds no thread inside libcurl or
/// OpenSSL while their library destructors run. (Detached threads that released those objects
/// after resuming the caller crashed about 1 process exit in 1,000 under load with heap
/// corruption.)
///
/// A plain pthread: Foundation's `Thread` would pull Foundation (and its ICU data) into every
/// process for this alone.
enum BlockingWork {
    ///
    /// `niceness` above 0 lowers the thread's CPU priority by that much (its nice value; on Linux
    /// each thread has its own): work that may saturate the CPU, such as a queue's transfers,
    /// then leaves the process's other threads (a daemon's answers) quick to be scheduled.
    static func run<Value: Sendable>(
        cancellation: CancellationFlag,
        niceness: Int32 = 0,
        _ body: @escaping @Sendable () throws(DownloadError) -> Value
    ) async throws(DownloadError) -> Value {
        let job = Job<Value> { () throws(DownloadError) -> Value in
            if niceness > 0 { lowerThreadPriority(by: niceness) }
            return try body()
        }
        let thread: pthread_t? = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                job.start(continuation)
            }
        } onCancel: {
            cancellation.cancel()
        }
        // The thread has resumed us as its last act; wait until it has really ended.
        if let thread { pthread_join(thread, nil) }
        return try job.takeResult().get()
    }

    /// Raises the calling thread's nice value by `step` (only this thread's: Linux's
    /// `setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, …)` names the calling thread). Best effort: a failure leaves
    /// the thread as it was.
    static func lowerThreadPriority(by step: Int32) {
        errno = 0
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        guard errno == 0 else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, min(19, current + step))
    }

    /// One piece of work and its result. The worker thread is its only user until it resumes
    /// the caller; the caller reads the result only after that.
    private final class Job<Value: Sendable>: @unchecked Sendable {
        private var body: (@Sendable () throws(DownloadError) -> Value)?
        private var result: Result<Value, DownloadError>?
        private var continuation: CheckedContinuation<pthread_t?, Never>?

        init(_ body: @escaping @Sendable () throws(DownloadError) -> Value) { self.body = body }

        func start(_ continuation: CheckedContinuation<pthread_t?, Never>) {
            self.continuation = continuation
            if !Launch.thread({ self.work(joinable: true) }) {
                // No thread to be had (resource limits): run here rather than never.
                work(joinable: false)
            }
        }

        /// Runs the body, releases it (and all it captured) on this thread, then resumes the
        /// caller: the last thing this thread does with anything but its own stack.
        private func work(joinable: Bool) {
            if let body {
                result = Result { () throws(DownloadError) -> Value in try body() }
            }
            body = nil
            let continuation = self.continuation
            self.continuation = nil
            continuation?.resume(returning: joinable ? pthread_self() : nil)
        }

        func takeResult() -> Result<Value, DownloadError> {
            // `work` always sets it before resuming; a job that never ran counts as stopped.
            result ?? .failure(.cancelled())
        }
    }

    /// Starts a joinable thread running `body`; `false` when none could be made. Not generic:
    /// a C callback cannot reach a generic context (and swiftc 6.3.1 crashes trying).
    final class Launch {
        private var body: (() -> Void)?

        private init(_ body: @escaping () -> Void) { self.body = body }

        static func thread(_ body: @escaping () -> Void) -> Bool {
            let context = Unmanaged.passRetained(Launch(body)).toOpaque()
            var thread = pthread_t()
            let status = pthread_create(&thread, nil, { raw in
                guard let raw else { return nil }
                let launch = Unmanaged<Launch>.fromOpaque(raw).takeRetainedValue()
                let body = launch.body
                launch.body = nil
                body?()
                return nil
            }, context)
            guard status == 0 else {
                Unmanaged<Launch>.fromOpaque(context).release()
                return false
            }
            return true
        }
    }
}
