import RangeFetchBase
import RangeFetchNetwork

/// Checks a file's pieces against a metalink's piece digests (``PieceDigests``) and says
/// which source to blame for each one that does not match.
enum PieceCheck {
    /// The pieces among `indices` whose bytes in `file` (of `size` bytes) do not hash to their
    /// digest, in order. Reads each piece once (``FileDescriptor/readBack(_:into:until:_:)``).
    static func badPieces(_ pieces: Metalink.Pieces, indices: [Int], file: PartialFile, size: Int64,
                          cancellation: CancellationFlag) throws(DownloadError) -> [Int] {
        var bad: [Int] = []
        try FileDescriptor.withReadBackBuffer { (buffer) throws(DownloadError) in
            for index in indices where pieces.digests.indices.contains(index) {
                if cancellation.isCancelled { throw DownloadError(.cancelled, "interrupted while checking the pieces of \(file.path)") }
                let expected = pieces.digests[index]
                let digest = Digest(expected.algorithm)
                // A short file hands on fewer bytes: the digest differs.
                _ = try DownloadError.withSystemCalls { () throws(SystemCallError) in
                    try file.handle.readBack(pieces.range(index, size: size), into: buffer) { _, bytes in digest.update(bytes) }
                }
                if digest.finalize() != expected { bad.append(index) }
            }
        }
        return bad
    }

    /// Who sent the bytes of `range`: every mirror whose delivered extents (`mirrorExtents`, by
    /// URL) overlap it, sorted; empty when none did (the main URL sent it all).
    static func blame(_ range: ByteRange, mirrorExtents: [String: [ByteRange]]) -> [String] {
        mirrorExtents.filter { $0.value.contains { $0.lower < range.upper && range.lower < $0.upper } }.keys.sorted()
    }
}
