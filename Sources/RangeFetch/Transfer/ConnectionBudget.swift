import Synchronization

/// Connections shared by the downloads of a batch: at most ``total`` at once, at most
/// ``perHost`` to any one host, and files that started earlier are served first (a file that
/// wants more connections than it has blocks later files from taking the ones that come free),
/// so partial results become whole files early instead of everything finishing at the end.
///
/// Thread-safe: every download's engine thread asks it before opening a connection.
public final class ConnectionBudget: Sendable {
    public let total: Int
    public let perHost: Int

    private struct State {
        var inUse = 0
        var byHost: [String: Int] = [:]
        /// Connections each waiting download asked for and did not get, by priority.
        var waiting: [Int: (host: String, count: Int)] = [:]
    }

    private let state = Mutex(State())

    public init(total: Int, perHost: Int) {
        self.total = max(1, total)
        self.perHost = max(1, perHost)
    }

    /// Takes one connection for a download of `priority` (lower goes first) to `host`; `false`
    /// when none is free for it.
    func acquire(host: String, priority: Int) -> Bool {
        state.withLock { state in
            let freeTotal = total - state.inUse
            let freeHost = perHost - state.byHost[host, default: 0]
            var aheadTotal = 0
            var aheadHost = 0
            for (other, wish) in state.waiting where other < priority {
                aheadTotal += wish.count
                if wish.host == host { aheadHost += wish.count }
            }
            guard freeTotal > aheadTotal, freeHost > aheadHost else { return false }
            state.inUse += 1
            state.byHost[host, default: 0] += 1
            return true
        }
    }

    /// Gives back a connection taken with ``acquire(host:priority:)``.
    func release(host: String) {
        state.withLock { state in
            state.inUse -= 1
            state.byHost[host, default: 1] -= 1
            if state.byHost[host] == 0 { state.byHost[host] = nil }
        }
    }

    /// Records how many more connections the download of `priority` wanted and did not get
    /// (0: none; call it with 0 when the download ends).
    func setWaiting(priority: Int, host: String, count: Int) {
        state.withLock { state in
            state.waiting[priority] = count > 0 ? (host, count) : nil
        }
    }

    /// Connections in use now.
    public var inUse: Int { state.withLock { $0.inUse } }
}

/// One download's access to a ``ConnectionBudget``.
struct ConnectionLease: Sendable {
    let budget: ConnectionBudget
    let host: String
    /// Lower is served first: the batch's file index.
    let priority: Int

    func acquire() -> Bool { budget.acquire(host: host, priority: priority) }
    func release() { budget.release(host: host) }
    func wanting(_ count: Int) { budget.setWaiting(priority: priority, host: host, count: count) }
}
