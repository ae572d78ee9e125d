import Foundation

/// Runs blocking work (libcurl loops, file hashing) on a dedicated thread so it never occupies
/// the cooperative pool; task cancellation trips `cancellation`.
enum BlockingWork {
    static func run<Value: Sendable>(
        cancellation: CancellationFlag,
        _ body: @escaping @Sendable () throws(DownloadError) -> Value
    ) async throws(DownloadError) -> Value {
        let result: Result<Value, DownloadError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread {
                    continuation.resume(returning: Result { () throws(DownloadError) -> Value in try body() })
                }
                thread.name = "rangefetch-engine"
                thread.start()
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }
}
