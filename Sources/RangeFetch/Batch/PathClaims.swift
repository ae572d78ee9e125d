import Synchronization

/// The final paths taken by the files of one batch, so two entries that turn out to have the
/// same name (the server's `Content-Disposition`) fail clearly instead of overwriting each other.
final class PathClaims: Sendable {
    private let claims = Mutex<[String: (index: Int, url: String)]>([:])

    /// Claims `path` for entry `index` (of `url`); returns the entry that already has it, if
    /// another does.
    func claim(_ path: String, by index: Int, url: String) -> (index: Int, url: String)? {
        claims.withLock { claims in
            if let other = claims[path], other.index != index { return other }
            claims[path] = (index, url)
            return nil
        }
    }
}
