import Testing
@testable import RangeFetch

/// `-n auto`'s search as a pure value, fed an aggregate rate that depends only on the count:
/// the smaller of the count times a per-connection cap and the path's rate.
struct ConnectionPolicyTests {
    static let mebibyte = 1_048_576.0

    struct Case: CustomTestStringConvertible, Sendable {
        var perConnection: Double
        var path: Double
        var maximum: Int
        /// The counts tried, in order, and where the search settles.
        var visits: [Int]
        var settles: Int
        var testDescription: String { "cap \(perConnection / ConnectionPolicyTests.mebibyte) MiB/s, path \(path / 1e6) MB/s, max \(maximum)" }
    }

    static let cases: [Case] = [
        // 12 MiB/s per connection on a 400 MB/s path: 32 carry it; 64 buys nothing and is given back.
        Case(perConnection: 12 * mebibyte, path: 400e6, maximum: 64, visits: [4, 8, 32, 64, 32], settles: 32),
        // 6 MiB/s: 64 are needed, the default ceiling.
        Case(perConnection: 6 * mebibyte, path: 400e6, maximum: 64, visits: [4, 8, 32, 64], settles: 64),
        // 25 MiB/s (the bench relay) on a 400 MB/s path: the leap to 32 bought less than its
        // linear gain but more than a doubling should, so 32 is kept.
        Case(perConnection: 25 * mebibyte, path: 400e6, maximum: 64, visits: [4, 8, 32], settles: 32),
        // 25 MiB/s on a 250 MB/s path: the leap to 32 bought little (x1.25), so it is cut
        // back to the 10 or so the gain needs.
        Case(perConnection: 25 * mebibyte, path: 250e6, maximum: 64, visits: [4, 8, 32, 10], settles: 10),
        // No cap: four connections fill the path.
        Case(perConnection: .infinity, path: 400e6, maximum: 64, visits: [4, 8, 4], settles: 4),
        // A given ceiling (--max-connections 40) is respected.
        Case(perConnection: 6 * mebibyte, path: 400e6, maximum: 40, visits: [4, 8, 32, 40], settles: 40),
        // 10 MB/s on 100 MB/s: 10 carry it (the measured gain, a hair over 1.25, rounds up to 11).
        Case(perConnection: 10e6, path: 100e6, maximum: 32, visits: [4, 8, 32, 11], settles: 11),
        // The old ceiling still holds when given.
        Case(perConnection: 12 * mebibyte, path: 400e6, maximum: 16, visits: [4, 8, 16], settles: 16),
    ]

    @Test(arguments: cases)
    func searchFindsTheCountTheCapNeeds(_ link: Case) {
        var policy = ConnectionPolicy.adaptive(maximum: link.maximum)
        var visits = [policy.target]
        var now = 0.0
        var received = 0.0
        for _ in 0..<200 {
            policy.observe(now: now, receivedBytes: Int64(received), streaming: policy.target, setupSeconds: 0.001, workLeft: true)
            if policy.target != visits.last { visits.append(policy.target) }
            let rate = min(Double(policy.target) * link.perConnection, link.path)
            now += 0.02
            received += rate * 0.02
        }
        #expect(visits == link.visits)
        #expect(policy.target == link.settles)
        #expect(policy.isSettled)
    }

    /// A server that refuses past 20 while auto grows: each refusal gives one back and the
    /// search stops, below the count that provoked it.
    @Test func pushbackPastSixteenStopsTheSearch() {
        var policy = ConnectionPolicy.adaptive(maximum: 64)
        var now = 0.0
        var received = 0.0
        while policy.target < 32 {
            policy.observe(now: now, receivedBytes: Int64(received), streaming: policy.target, setupSeconds: 0.001, workLeft: true)
            now += 0.02
            received += Double(policy.target) * 6 * Self.mebibyte * 0.02
        }
        for _ in 0..<(policy.target - 20) { policy.pushback() }
        #expect(policy.target == 20)
        #expect(policy.isSettled)
        for _ in 0..<100 {
            now += 0.02
            received += 20 * 6 * Self.mebibyte * 0.02
            policy.observe(now: now, receivedBytes: Int64(received), streaming: 20, setupSeconds: 0.001, workLeft: true)
        }
        #expect(policy.target == 20)
    }
}
