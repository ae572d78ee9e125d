import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The token bucket behind `--max-speed` and the daemon's live limits (``SpeedControl``): no cap,
/// a cap set, lifted and lowered while transfers take from it.
struct RateLimiterTests {
    @Test func withNoCapEveryTakeSucceeds() {
        var bucket = RateLimiter(bytesPerSecond: nil, now: 0)
        var taken = 0
        for _ in 0..<1000 where bucket.take(1 << 20) { taken += 1 }
        #expect(taken == 1000 && bucket.hasTokens)
    }

    @Test func aCapSetOnAnUncappedBucketHoldsAtOnce() {
        var bucket = RateLimiter(bytesPerSecond: nil, now: 0)
        bucket.setRate(1 << 20, now: 0)
        let first = bucket.take(200 << 10)  // the 64 KiB held, overdrawn
        let second = bucket.take(1)
        #expect(first && !second)
    }

    @Test func aCapLiftedLetsAnOverdrawnBucketGoOn() {
        var bucket = RateLimiter(bytesPerSecond: 1 << 20, now: 0)
        _ = bucket.take(4 << 20)
        let capped = bucket.take(1)
        bucket.setRate(nil, now: 0)
        let lifted = bucket.take(1)
        #expect(!capped && lifted && bucket.hasTokens)
    }

    /// Lowered to 100 KiB/s, the bucket holds that rate's burst (64 KiB), not the old one's
    /// (a tenth of 1 MiB): after 2 s, 64 KiB empties it.
    @Test func aLoweredCapHoldsItsOwnBurst() {
        var bucket = RateLimiter(bytesPerSecond: 1 << 20, now: 0)
        bucket.setRate(100 << 10, now: 0)
        bucket.refill(now: 2)
        let took = bucket.take(64 << 10)
        #expect(took && !bucket.hasTokens)
    }
}
