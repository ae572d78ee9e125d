import RangeFetchBase
import RangeFetchNetwork
import Synchronization

/// The final paths taken by the files of one batch, so two entries that turn out to have the
/// same name (the server's `Content-Disposition`) fail clearly instead of overwriting each other.
///
/// A path is kept as a 64-bit fingerprint (the first 8 bytes of its SHA-256) with the entry's
/// number and nothing else: a batch of a million files claims a million paths, and keeping the
/// paths and URLs themselves cost about 200 bytes a file (249 MB of a 1 M-file batch's peak).
/// Two distinct paths share a fingerprint with a chance of about n²/2⁶⁵ (3 in 100 million for
/// a million files); such an entry would be refused as a duplicate, never overwritten.
final class PathClaims: Sendable {
    private let claims = Mutex<[UInt64: Int]>([:])

    /// Claims `path` for entry `index`; returns the number of the entry that already has it, if
    /// another does.
    func claim(_ path: String, by index: Int) -> Int? {
        let key = Self.fingerprint(path)
        return claims.withLock { claims in
            if let other = claims[key], other != index { return other }
            claims[key] = index
            return nil
        }
    }

    private static func fingerprint(_ path: String) -> UInt64 { SHA256Prefix.of(path) }
}
