import RangeFetchBase
import Synchronization

/// A download's speed cap that can change while it runs (the daemon's `max-download-limit`
/// through `changeOption`, and its share of `max-overall-download-limit`): set from any thread,
/// read by the download's engine once per round of its loop, so a change shows at the server
/// within a round. Two controls are equal only when they are the same control.
public final class SpeedControl: Sendable, Equatable {
    /// Bytes per second; 0: no cap.
    private let rate: Atomic<Int64>

    /// A control capping at `bytesPerSecond` (`nil`: no cap until one is set).
    public init(bytesPerSecond: Int64? = nil) {
        rate = Atomic(max(0, bytesPerSecond ?? 0))
    }

    /// The cap now, in bytes per second; `nil`: none. Caps under 1 KiB/s are raised to 1 KiB/s
    /// (as `--max-speed` refuses them).
    public var bytesPerSecond: Int64? {
        get {
            let value = rate.load(ordering: .relaxed)
            return value > 0 ? value : nil
        }
        set { rate.store(newValue.map { max(1024, $0) } ?? 0, ordering: .relaxed) }
    }

    public static func == (lhs: SpeedControl, rhs: SpeedControl) -> Bool { lhs === rhs }
}
