/// Checks a file's pieces against a metalink's piece digests (``Metalink/Pieces``) and says
/// which source to blame for each one that does not match.
enum PieceCheck {
    /// The pieces among `indices` whose bytes in `file` (of `size` bytes) do not hash to their
    /// digest, in order. Reads each piece once with `pread`.
    static func badPieces(_ pieces: Metalink.Pieces, indices: [Int], file: PartialFile, size: Int64,
                          cancellation: CancellationFlag) throws(DownloadError) -> [Int] {
        var bad: [Int] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        for index in indices where pieces.digests.indices.contains(index) {
            if cancellation.isCancelled { throw DownloadError(.cancelled, "interrupted while checking the pieces of \(file.path)") }
            let expected = pieces.digests[index]
            let range = pieces.range(index, size: size)
            let digest = Digest(expected.algorithm)
            var offset = range.lower
            while offset < range.upper {
                let want = Int(min(Int64(buffer.count), range.upper - offset))
                let got = try DownloadError.withSystemCalls { () throws(SystemCallError) in
                    try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
                }
                guard got > 0 else { break } // short file: the digest will differ
                digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                offset += Int64(got)
            }
            if digest.finalize() != expected { bad.append(index) }
        }
        return bad
    }

    /// Who sent the bytes of `range`: every mirror whose delivered extents (`mirrorExtents`, by
    /// URL) overlap it, sorted; empty when none did (the main URL sent it all).
    static func blame(_ range: ByteRange, mirrorExtents: [String: [ByteRange]]) -> [String] {
        mirrorExtents.filter { $0.value.contains { $0.lower < range.upper && range.lower < $0.upper } }.keys.sorted()
    }
}
