#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (libcurl loops, file hashing) on a dedicated thread so it never occupies
/// the cooperative pool; task cancellation trips `cancellation`.
///
/// A plain pthread: Foundation's `Thread` would pull Foundation (and its ICU data) into every
/// process for this alone.
enum BlockingWork {
    static func run<Value: Sendable>(
        cancellation: CancellationFlag,
        _ body: @escaping @Sendable () throws(DownloadError) -> Value
    ) async throws(DownloadError) -> Value {
        let result: Result<Value, DownloadError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                startThread {
                    continuation.resume(returning: Result { () throws(DownloadError) -> Value in try body() })
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }

    private final class Job {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread.
    private static func startThread(_ body: @escaping @Sendable () -> Void) {
        let job = Unmanaged.passRetained(Job(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<Job>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }, job)
        guard status == 0 else {
            // No thread to be had (resource limits): run here rather than never.
            Unmanaged<Job>.fromOpaque(job).takeRetainedValue().body()
            return
        }
        pthread_detach(thread)
    }
}
