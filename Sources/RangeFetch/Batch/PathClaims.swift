import Synchronization

/// The final paths taken by the files of one batch, so two entries that turn out to have the
/// same name (the server's `Content-Disposition`) fail clearly instead of overwriting each other.
final class PathClaims: Sendable {
    private let claims = Mutex<[String: Int]>([:])

    /// Claims `path` for entry `index`; returns the entry that already has it, if another does.
    func claim(_ path: String, by index: Int) -> Int? {
        claims.withLock { claims in
            if let other = claims[path], other != index { return other }
            claims[path] = index
            return nil
        }
    }
}
