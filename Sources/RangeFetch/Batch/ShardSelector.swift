import RangeFetchBase
import RangeFetchNetwork

/// `--shard K/N`: keeps the entries whose URL hashes to shard `K` of `N` (`0 ≤ K < N`), so `N`
/// machines given one manifest split it with no coordinator: every URL belongs to exactly one
/// shard, whatever the order of the lines or which other URLs are listed.
///
/// The hash is the first 8 bytes of the URL's SHA-256 read as a big-endian integer, modulo `N`
/// (in Python: `int.from_bytes(hashlib.sha256(url.encode()).digest()[:8], "big") % n`).
public struct ShardSelector: Sendable, Equatable {
    /// K: this machine's shard, from 0.
    public let index: Int
    /// N: how many shards the list is split into.
    public let count: Int

    /// Shard `index` of `count`; throws unless 0 <= index < count.
    public init(index: Int, count: Int) throws(DownloadError) {
        guard count >= 1, (0..<count).contains(index) else {
            throw DownloadError(.invalidOption, "shard K/N needs 0 <= K < N (got \(index)/\(count))")
        }
        self.index = index
        self.count = count
    }

    /// Parses `K/N`.
    public init(parsing text: String) throws(DownloadError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
            throw DownloadError(.invalidOption, "a shard is K/N, e.g. 0/4 for the first of four shards (got '\(text)')")
        }
        try self.init(index: index, count: count)
    }

    /// The shard `url` belongs to.
    public static func shard(of url: String, count: Int) -> Int {
        let prefix = SHA256Prefix.of(url)
        return Int(prefix % UInt64(count))
    }

    /// Whether `url` belongs to this shard (the first 8 bytes of its SHA-256, big-endian, modulo N).
    public func includes(_ url: String) -> Bool {
        Self.shard(of: url, count: count) == index
    }
}
