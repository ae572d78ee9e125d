import Testing
@testable import RangeFetch

/// How many entries the lane asks its feed for (``SmallFileLane/entriesToAsk(capacity:flights:ready:asked:)``).
struct LaneFeedAskTests {
    /// The lane asks its feed in batches of half its share (the feed's thread wakes once for
    /// several), at once when it has none ready or coming, and never past its share and lookahead.
    @Test(arguments: [
        // (capacity, flights, ready, asked, to ask); lookahead 1: a share of 16 holds 32
        (16, 0, 0, 0, 32),
        (16, 16, 16, 0, 0),
        (16, 16, 9, 0, 0),
        (16, 16, 8, 0, 8),
        (16, 15, 0, 10, 0),
        (16, 10, 0, 0, 22),
        (16, 31, 0, 0, 1),
        (16, 32, 0, 0, 0),
        (1, 0, 0, 0, 2),
        (1, 1, 0, 0, 1),
        (1, 1, 1, 0, 0),
    ])
    func theLaneAsksItsFeedInBatches(_ capacity: Int, _ flights: Int, _ ready: Int, _ asked: Int, _ count: Int) {
        #expect(SmallFileLane.lookahead == 1)
        #expect(SmallFileLane.entriesToAsk(capacity: capacity, flights: flights, ready: ready, asked: asked) == count)
    }
}
