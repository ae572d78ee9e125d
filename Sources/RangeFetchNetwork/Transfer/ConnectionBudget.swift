import RangeFetchBase
import Synchronization

/// Connections shared by the downloads of a batch: at most ``total`` at once, at most
/// ``perHost`` to any one host (an origin: scheme, host and port), and files that started earlier are served first (a file that
/// wants more connections than it has blocks later files from taking the ones that come free),
/// so partial results become whole files early instead of everything finishing at the end.
///
/// Thread-safe: every download's engine thread asks it before opening a connection.
package final class ConnectionBudget: Sendable {
    package let total: Int
    package let perHost: Int

    private struct State {
        var inUse = 0
        var byHost: [String: Int] = [:]
        /// Connections each waiting download asked for and did not get, by priority.
        var waiting: [Int: (host: String, count: Int)] = [:]
    }

    private let state = Mutex(State())

    package init(total: Int, perHost: Int) {
        self.total = max(1, total)
        self.perHost = max(1, perHost)
    }

    /// Takes one connection for a download of `priority` (lower goes first) to `host`; `false`
    /// when none is free for it.
    package func acquire(host: String, priority: Int) -> Bool {
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

    /// Gives back `count` connections taken with ``acquire(host:priority:)`` or ``take(host:count:)``.
    package func release(host: String, count: Int = 1) {
        guard count > 0 else { return }
        state.withLock { state in
            state.inUse -= count
            state.byHost[host, default: count] -= count
            if state.byHost[host, default: 0] <= 0 { state.byHost[host] = nil }
        }
    }

    /// Counts `count` connections that are open already (a probe's), whether or not there was room.
    package func take(host: String, count: Int) {
        guard count > 0 else { return }
        state.withLock { state in
            state.inUse += count
            state.byHost[host, default: 0] += count
        }
    }

    /// Records how many more connections the download of `priority` wanted and did not get
    /// (0: none; call it with 0 when the download ends).
    package func setWaiting(priority: Int, host: String, count: Int) {
        state.withLock { state in
            state.waiting[priority] = count > 0 ? (host, count) : nil
        }
    }

    /// Connections in use now.
    package var inUse: Int { state.withLock { $0.inUse } }

    /// Whether a download is waiting for a connection it asked for and did not get.
    package var isWanted: Bool { state.withLock { !$0.waiting.isEmpty } }
}

/// The connections one batch worker holds of the budget: one for each TCP connection open
/// through its libcurl handle, in use or idle in its cache (kept for the next range or file), so
/// the budget's limits count open TCP connections, not requests. Counted per host: a file's
/// mirrors on other hosts hold connections of their own hosts.
///
/// A transfer takes a held connection to its host that is idle before asking the budget for
/// another; a finished transfer's connection stays held while it stays open; ``settle(open:host:)``
/// brings the count in line with the sockets libcurl really has open (it closes some; a probe
/// opens one). Thread-safe; used by one worker's thread at a time.
package final class WorkerConnections: Sendable {
    package let budget: ConnectionBudget
    private struct State {
        /// The host of the file being downloaded (its main URL's).
        var current: String?
        var held: [String: Int] = [:]
        var active: [String: Int] = [:]

        var totalHeld: Int { held.values.reduce(0, +) }
        var totalActive: Int { active.values.reduce(0, +) }
    }
    private let state = Mutex(State())

    package init(budget: ConnectionBudget) {
        self.budget = budget
    }

    /// One connection for a transfer to `host` for the file of `priority`; `false` when the
    /// budget has none.
    package func acquire(host: String, priority: Int) -> Bool {
        state.withLock { state in
            if state.held[host, default: 0] > state.active[host, default: 0] {
                state.active[host, default: 0] += 1
                return true
            }
            guard budget.acquire(host: host, priority: priority) else { return false }
            state.held[host, default: 0] += 1
            state.active[host, default: 0] += 1
            return true
        }
    }

    /// A transfer to `host` ended; its connection stays held while it stays open.
    package func release(host: String) {
        state.withLock { $0.active[host] = max(0, $0.active[host, default: 0] - 1) }
    }

    /// Holds exactly the connections open now (`open`, from libcurl's socket callbacks), never
    /// fewer than the transfers running; `host` is the current file's. A new file's host gives
    /// back what other hosts held idle (their connections are of no use to it; libcurl closes
    /// them in time).
    package func settle(open: Int, host: String) {
        state.withLock { state in
            if state.current != host {
                for (other, held) in state.held where other != host {
                    let idle = held - state.active[other, default: 0]
                    if idle > 0 { budget.release(host: other, count: idle); state.held[other] = held - idle }
                }
                state.current = host
            }
            let target = max(open, state.totalActive)
            var excess = state.totalHeld - target
            // Idle connections close: give back idle slots, other hosts' first.
            for other in state.held.keys.sorted(by: { ($0 == host ? 1 : 0) < ($1 == host ? 1 : 0) }) where excess > 0 {
                let idle = min(excess, state.held[other, default: 0] - state.active[other, default: 0])
                guard idle > 0 else { continue }
                budget.release(host: other, count: idle)
                state.held[other, default: 0] -= idle
                excess -= idle
            }
            if excess < 0 {
                budget.take(host: host, count: -excess)
                state.held[host, default: 0] += -excess
            }
        }
    }

    /// Gives everything back (the worker is done).
    package func releaseAll() {
        state.withLock { state in
            for (host, held) in state.held { budget.release(host: host, count: held) }
            state = State()
        }
    }
}

/// One download's access to a ``ConnectionBudget``, through its worker's connections.
package struct ConnectionLease: Sendable {
    package let worker: WorkerConnections
    /// The host of the file's main URL.
    package let host: String
    /// Lower is served first: the batch's file index.
    package let priority: Int

    package func acquire(host: String? = nil) -> Bool { worker.acquire(host: host ?? self.host, priority: priority) }
    package func release(host: String? = nil) { worker.release(host: host ?? self.host) }
    /// Counts the connections open through the download's handle (see ``WorkerConnections/settle(open:host:)``).
    package func settle(open: Int) { worker.settle(open: open, host: host) }
    package func wanting(_ count: Int) { worker.budget.setWaiting(priority: priority, host: host, count: count) }

    package init(worker: WorkerConnections, host: String, priority: Int) {
        self.worker = worker
        self.host = host
        self.priority = priority
    }
}
