import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT and SIGTERM into task cancellation, so a download records its progress and
/// exits 130 instead of dying mid-write.
/// `@unchecked`: `sources` is set once in `init`; DispatchSource is thread-safe but not annotated.
final class Interrupts: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]

    init(onSignal: @escaping @Sendable () -> Void) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: onSignal)
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
