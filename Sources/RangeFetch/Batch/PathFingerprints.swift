import RangeFetchBase
import RangeFetchNetwork

/// A compact set of output paths for lists of millions: each path is kept as a 48-bit
/// fingerprint (4 bytes in one of 65,536 sorted buckets chosen by 16 more bits), about 5 bytes a
/// path with the buckets' spare room, instead of the path itself.
///
/// A path never seen before can share a fingerprint with one seen (for n paths, a chance of about
/// n² / 2⁴⁹: 0.2 % for a million, 18 % for ten million), so ``insert(_:)`` answers "new" or
/// "maybe seen"; ``DistinctPaths`` settles a "maybe" exactly.
struct PathFingerprints: Sendable {
    /// Buckets, chosen by the fingerprint's top 16 bits.
    static let bucketCount = 1 << 16

    private var buckets = [[UInt32]](repeating: [], count: bucketCount)

    /// Paths inserted (fingerprints kept).
    private(set) var count = 0

    /// Adds `path`: `true` when its fingerprint is new (the path surely is), `false` when a path
    /// with the same fingerprint was inserted before.
    mutating func insert(_ path: String) -> Bool {
        let hash = Self.hash(path)
        let bucket = Int(hash >> 48)
        let low = UInt32(truncatingIfNeeded: hash)
        // Binary search for `low` in the sorted bucket.
        var lower = 0
        var upper = buckets[bucket].count
        while lower < upper {
            let middle = (lower + upper) / 2
            if buckets[bucket][middle] < low { lower = middle + 1 } else { upper = middle }
        }
        if lower < buckets[bucket].count && buckets[bucket][lower] == low { return false }
        // Grow by a quarter rather than doubling: the spare room is memory held for good.
        let size = buckets[bucket].count
        if size == buckets[bucket].capacity { buckets[bucket].reserveCapacity(size + size / 4 + 8) }
        buckets[bucket].insert(low, at: lower)
        count += 1
        return true
    }

    /// 64 bits of `path` that do not change from run to run: FNV-1a over its UTF-8, then
    /// SplitMix64's finalizer so every bit depends on every byte.
    static func hash(_ path: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        return hash ^ (hash >> 31)
    }
}
