import RangeFetchBase
import Synchronization

/// What passes between a download's engine and the mirror checks running beside it on a thread
/// of their own (``MirrorAgreement``): mirrors as they agree with the main URL go in and join the
/// running engine's ``SourceSet`` at its next decision round; mirrors the engine drops come back
/// (a backup may replace each); warnings the checks owe the user wait here, to be said on the
/// download's own thread, where every event is said, in order.
///
/// Thread-safe: one lock around small arrays, taken once per decision round.
package final class MirrorFeed: Sendable {
    private struct State {
        var agreed: [RemoteFile] = []
        var distrusted: Set<String> = []
        var dropped: [String] = []
        var warnings: [DownloadWarning] = []
        var wake: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    package init() {}

    // MARK: From the checks

    /// `remote` (a mirror's probe) agreed with the main URL: engines take it from their next round.
    package func agreed(_ remote: RemoteFile) {
        state.withLock { $0.agreed.append(remote) }
    }

    /// A warning to say on the download's thread (``takeWarnings()``).
    package func warn(_ warning: DownloadWarning) {
        state.withLock { $0.warnings.append(warning) }
    }

    /// Called (from the engine's thread) when a mirror is dropped: wakes the checks' loop.
    package func onDrop(_ wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wake = wake }
    }

    /// The mirrors dropped since the last call, by URL.
    package func takeDropped() -> [String] {
        state.withLock { state in
            defer { state.dropped = [] }
            return state.dropped
        }
    }

    // MARK: From the download

    /// The engine dropped the mirror `url` (``SourceSet/Drop``).
    package func dropped(_ url: String) {
        let wake = state.withLock { state in
            state.dropped.append(url)
            return state.wake
        }
        wake?()
    }

    /// `url` sent bytes proven wrong: no engine of this download uses it again.
    package func distrust(_ url: String) {
        state.withLock { _ = $0.distrusted.insert(url) }
    }

    /// The agreed mirrors from position `seen` on, less the distrusted, and the position to ask
    /// from next time.
    package func mirrors(after seen: Int) -> (fresh: [RemoteFile], seen: Int) {
        state.withLock { state in
            let fresh = state.agreed.dropFirst(min(seen, state.agreed.count)).filter { !state.distrusted.contains($0.url) }
            return (Array(fresh), state.agreed.count)
        }
    }

    /// The warnings the checks queued since the last call.
    package func takeWarnings() -> [DownloadWarning] {
        state.withLock { state in
            defer { state.warnings = [] }
            return state.warnings
        }
    }
}
