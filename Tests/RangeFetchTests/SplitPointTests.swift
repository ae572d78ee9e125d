import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``SplitPoint`` as a table: a busy request's rest, its rate and a fresh connection's, and its
/// cost in; where the cut goes out (default tuning: 4 KiB alignment, 128 KiB crumbs, gains of at
/// least 20 ms and two set-up times, slow under a quarter of the fresh rate).
struct SplitPointTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var rest: ByteRange = ByteRange(0, 100 << 20)
        var victimRate: Double?
        var freshRate = 10e6
        var freshCostSeconds = 0.05
        var replacesSlowConnections = true
        var pieceBytes: Int64?
        var cut: Int64?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "not measured yet: halved", victimRate: nil, cut: 50 << 20),
        Case(name: "stalled: taken over whole", victimRate: 0, cut: 0),
        Case(name: "equal rates: the victim keeps the fresh connection's set-up worth more, aligned down",
             victimRate: 10e6, cut: 12_861 * 4096),
        Case(name: "equal rates, no set-up cost: halved", victimRate: 10e6, freshCostSeconds: 0, cut: 50 << 20),
        Case(name: "under a quarter of the fresh rate: taken over whole", victimRate: 1e6, cut: 0),
        Case(name: "under a speed cap: halved, never taken over", victimRate: 1e6, replacesSlowConnections: false, cut: 50 << 20),
        Case(name: "a cut that gains under two set-up times is not made", rest: ByteRange(0, 1 << 20), victimRate: 10e6, cut: nil),
        Case(name: "a new part under 128 KiB is not cut off", rest: ByteRange(0, 200 << 10), victimRate: nil, cut: nil),
        Case(name: "an unaligned rest is halved and rounded down to 4 KiB", rest: ByteRange(4097, 4097 + (1 << 20)),
             victimRate: nil, cut: 129 * 4096),
        Case(name: "with 1 MiB metalink pieces: on the piece boundary below", rest: ByteRange(300_000, 4 << 20),
             victimRate: nil, pieceBytes: 1 << 20, cut: 2 << 20),
    ]

    @Test(arguments: cases)
    func cuts(_ test: Case) {
        var tuning = TransferScheduler.Tuning()
        tuning.replacesSlowConnections = test.replacesSlowConnections
        tuning.cutAlignment.pieceBytes = test.pieceBytes
        let rule = SplitPoint(tuning: tuning, freshCostSeconds: test.freshCostSeconds)
        #expect(rule.offset(test.rest, victimRate: test.victimRate, freshRate: test.freshRate) == test.cut)
    }
}
