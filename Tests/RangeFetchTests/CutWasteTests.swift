import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``CutWaste`` as a table: cuts of a download with 64 MiB left (a budget of 6.4 MiB), some
/// after cut requests were seen stopping with bytes ahead; which cuts the budget allows.
struct CutWasteTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var remaining: Int64 = 64 << 20
        /// What was seen ahead of earlier cuts, in order.
        var seenAhead: [CutWaste.Unread] = []
        /// Bytes each cut request had on the wire.
        var onTheWire: Int64 = 0
        /// Tails (bytes after the cut) asked for in order.
        var tails: [Int64]
        /// Whether each was allowed.
        var allowed: [Bool]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "before any cut request stopped, a tail counts whole: three of 2 MiB fit, the fourth not",
             tails: [2 << 20, 2 << 20, 2 << 20, 2 << 20], allowed: [true, true, true, false]),
        Case(name: "cuts that stopped 64 KiB ahead cost 128 KiB each: many 2 MiB tails fit",
             seenAhead: [ahead(64 << 10)], tails: Array(repeating: 2 << 20, count: 40), allowed: Array(repeating: true, count: 40)),
        Case(name: "the most seen ahead counts, not the latest", seenAhead: [ahead(3 << 20), ahead(1 << 10)],
             tails: [8 << 20, 8 << 20], allowed: [true, false]),
        Case(name: "a tail shorter than twice what was seen costs the tail", seenAhead: [ahead(4 << 20)],
             tails: [1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20],
             allowed: [true, true, true, true, true, true, false]),
        Case(name: "a small download has the 1 MiB floor", remaining: 2 << 20,
             tails: [512 << 10, 512 << 10, 512 << 10], allowed: [true, true, false]),
        Case(name: "nothing seen ahead, 1 MiB on the wire (a WAN): 32 MiB tails cost 1 MiB each",
             seenAhead: [ahead(0)], onTheWire: 1 << 20, tails: Array(repeating: 32 << 20, count: 7), allowed: [true, true, true, true, true, true, false]),
        // Measured over HTTP/2 from a loopback server: 164 KiB unread with 82-164 KiB of receive
        // space, and the server had sent every 2 MiB tail whole.
        Case(name: "a queue at the window's limit: tails count whole again, whatever was seen",
             seenAhead: [ahead(64 << 10), ahead(164 << 10, space: 160 << 10)],
             tails: [2 << 20, 2 << 20, 2 << 20, 2 << 20], allowed: [true, true, true, false]),
        Case(name: "a queue under half the receive space is no full window",
             seenAhead: [ahead(64 << 10, space: 160 << 10)], tails: Array(repeating: 2 << 20, count: 40), allowed: Array(repeating: true, count: 40)),
        Case(name: "an unknown receive space is no full window",
             seenAhead: [ahead(64 << 10, space: nil)], tails: Array(repeating: 2 << 20, count: 40), allowed: Array(repeating: true, count: 40)),
    ]

    static func ahead(_ bytes: Int64, space: Int64? = 64 << 20) -> CutWaste.Unread {
        CutWaste.Unread(bytes: bytes, receiveSpace: space)
    }

    @Test(arguments: cases)
    func cutsSpendTheBudget(_ test: Case) {
        var waste = CutWaste()
        waste.start(remaining: test.remaining)
        // A second start (a later decision) does not move the budget.
        waste.start(remaining: 1)
        for unread in test.seenAhead { waste.observe(aheadOfCut: unread) }
        var allowed: [Bool] = []
        for tail in test.tails {
            let cut = CutWaste.Cut(tail: tail, onTheWire: test.onTheWire)
            let ok = waste.allows(cut)
            if ok { waste.made(cut) }
            allowed.append(ok)
        }
        #expect(allowed == test.allowed)
    }

    /// The first cuts are counted whole; once a cut request is seen stopping with little past
    /// its cut, they are counted again at that, and the budget has room again.
    @Test func earlyCutsAreCountedAgainWithWhatIsLearnt() {
        var waste = CutWaste()
        waste.start(remaining: 64 << 20)
        let tail = CutWaste.Cut(tail: 2 << 20, onTheWire: 0)
        for _ in 0..<3 { waste.made(tail) }
        #expect(!waste.allows(tail))
        waste.observe(aheadOfCut: Self.ahead(100 << 10))
        #expect(waste.booked == 3 * (200 << 10))
        #expect(waste.allows(tail))
        // Cuts proposed in the same round count too.
        #expect(!waste.allows(tail, pending: 6 << 20))
    }
}
