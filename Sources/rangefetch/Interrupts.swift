import CFileShims
import RangeFetch
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT and SIGTERM into task cancellation, so a download records its progress and
/// exits 130 instead of dying mid-write.
///
/// The signals are caught by a handler installed at once (``cfs_catch_signals``) that writes to
/// a pipe, and the pipe is read on a dispatch queue. A dispatch signal source alone registers
/// asynchronously, and the signals ignored meanwhile were lost: 2 SIGINTs in 428 under load
/// let the download run to the end and exit 0.
/// `@unchecked`: `source` and `pipe` are set once in `init`; DispatchSource is thread-safe but
/// not annotated.
final class Interrupts: @unchecked Sendable {
    private static let signals: [Int32] = [SIGINT, SIGTERM]
    private let source: DispatchSourceRead?
    private let pipe: Int32

    init(onSignal: @escaping @Sendable () -> Void) {
        pipe = Self.signals.withUnsafeBufferPointer { cfs_catch_signals($0.baseAddress, Int32($0.count)) }
        guard pipe >= 0 else {
            source = nil
            return
        }
        let descriptor = pipe
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: .global())
        source.setEventHandler {
            var bytes = [UInt8](repeating: 0, count: 16)
            let count = try? bytes.withUnsafeMutableBytes { try FileDescriptor(descriptor, path: "the signal pipe").read(into: $0) }
            if let count, count > 0 { onSignal() }
        }
        source.resume()
        self.source = source
    }

    /// Runs `work` as a task that SIGINT and SIGTERM cancel while it runs, and returns its value;
    /// any error that is not a ``DownloadError`` (none is expected) becomes a usage error.
    static func cancelling<Value: Sendable>(
        _ work: @escaping @Sendable () async throws(DownloadError) -> Value
    ) async throws(DownloadError) -> Value {
        let task = Task { () async throws(DownloadError) -> Value in try await work() }
        let interrupts = Interrupts { task.cancel() }
        defer { interrupts.cancel() }
        do {
            return try await task.value
        } catch let error as DownloadError {
            throw error
        } catch {
            throw DownloadError(usageMessage: "\(error)")
        }
    }

    /// Stops catching: the signals have their default action again.
    func cancel() {
        Self.signals.withUnsafeBufferPointer { cfs_default_signals($0.baseAddress, Int32($0.count)) }
        source?.cancel()
    }
}
