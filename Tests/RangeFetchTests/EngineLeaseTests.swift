import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// How the engine takes connections of a batch's budget for a request (``EngineLease``): one to
/// the host the request goes to, a split's connection to the main host kept or traded, and none
/// kept for a request that does not start. A budget of one connection per host shows which are
/// held afterwards: a host is free when the download can take one more connection to it.
struct EngineLeaseTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// A split took a connection to the main host already.
        var leased: Bool
        /// Where the request goes: the main URL (0), the mirror (1), or nowhere (`nil`).
        var picked: Int?
        /// The mirror's one connection is taken by another request first.
        var mirrorBusy = false
        var starts: Bool
        var mainFreeAfter: Bool
        var mirrorFreeAfter: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "to the main host", leased: false, picked: 0, starts: true, mainFreeAfter: false, mirrorFreeAfter: true),
        Row(name: "to a mirror", leased: false, picked: 1, starts: true, mainFreeAfter: true, mirrorFreeAfter: false),
        Row(name: "to a mirror with no room", leased: false, picked: 1, mirrorBusy: true, starts: false,
            mainFreeAfter: true, mirrorFreeAfter: false),
        Row(name: "nowhere to go", leased: false, picked: nil, starts: false, mainFreeAfter: true, mirrorFreeAfter: true),
        Row(name: "a split's, to the main host", leased: true, picked: 0, starts: true, mainFreeAfter: false, mirrorFreeAfter: true),
        Row(name: "a split's, traded for a mirror's", leased: true, picked: 1, starts: true, mainFreeAfter: true, mirrorFreeAfter: false),
        Row(name: "a split's, to a mirror with no room", leased: true, picked: 1, mirrorBusy: true, starts: false,
            mainFreeAfter: true, mirrorFreeAfter: false),
        Row(name: "a split's, nowhere to go", leased: true, picked: nil, starts: false, mainFreeAfter: true, mirrorFreeAfter: true),
    ]

    @Test(arguments: rows)
    func aRequestHoldsOneConnectionToItsHostOrNone(_ row: Row) {
        let budget = ConnectionBudget(total: 4, perHost: 1)
        let lease = ConnectionLease(worker: WorkerConnections(budget: budget), host: "http://main", priority: 0)
        let leases = EngineLease(lease: lease) { $0.isMain ? "http://main" : "http://mirror" }
        // Other requests of the batch, on a worker of their own.
        let others = ConnectionLease(worker: WorkerConnections(budget: budget), host: "http://mirror", priority: 1)
        if row.mirrorBusy { #expect(others.acquire()) }
        if row.leased { #expect(leases.acquire(.main)) }
        #expect(leases.take(for: row.picked.map { SourceID(index: $0) }, leased: row.leased) == row.starts)
        // The download's next request: a connection given back is its again (still open).
        #expect(lease.acquire() == row.mainFreeAfter, "main host")
        #expect(lease.acquire(host: "http://mirror") == row.mirrorFreeAfter, "mirror")
    }

    @Test func withoutABudgetEveryRequestStarts() {
        let leases = EngineLease(lease: nil) { _ in "http://main" }
        #expect(leases.take(for: .main, leased: false))
        #expect(leases.take(for: SourceID(index: 1), leased: true))
        #expect(!leases.take(for: nil, leased: false))
    }
}
