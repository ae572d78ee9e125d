#if canImport(Glibc)
import Glibc
#endif

/// Several digests fed from one pass over the same bytes.
package final class MultiDigest {
    private let digests: [Digest]

    package init(_ algorithms: [DigestAlgorithm]) {
        var seen: [DigestAlgorithm] = []
        for algorithm in algorithms where !seen.contains(algorithm) { seen.append(algorithm) }
        digests = seen.map(Digest.init)
    }

    package var isEmpty: Bool { digests.isEmpty }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        for digest in digests { digest.update(bytes) }
    }

    package func finalize() -> [DigestValue] { digests.map { $0.finalize() } }
}

/// Hashes files on disk with large reads (1 MiB), as `rangefetch verify` and downloads do.
package enum FileDigester {
    /// Bytes read per `pread`.
    package static let readBytes = FileDescriptor.readBackBytes

    /// The digests of the file at `path`, one per algorithm, in one pass.
    /// - Throws: `.cancelled` within one read of `cancellation` being set.
    package static func digests(ofFileAt path: String, algorithms: [DigestAlgorithm],
                        cancellation: CancellationFlag? = nil) throws(DownloadError) -> [DigestValue] {
        switch FileSystem.kind(of: path) {
        case .regular: break
        case .missing: throw DownloadError(.fileSystem(errno: ENOENT), "\(path): no such file")
        default: throw DownloadError(.fileSystem(errno: EISDIR), "\(path) is not a regular file")
        }
        let file: PartialFile
        do {
            file = try PartialFile(path: path, readOnly: true)
        } catch {
            throw error.downloadError
        }
        let digest = MultiDigest(algorithms)
        do {
            _ = try hash(file, from: 0, to: nil, into: digest, cancellation: cancellation)
        } catch {
            throw error.downloadError
        }
        if cancellation?.isCancelled == true { throw .cancelled() }
        return digest.finalize()
    }

    /// Feeds bytes `[from, to)` of `file` (to end of file when `to` is nil) into `digest`;
    /// returns the offset reached, short of `to` when `cancellation` was set (checked before
    /// every read, so a large file stops within one read).
    package static func hash(_ file: PartialFile, from start: Int64, to end: Int64?, into digest: MultiDigest,
                     buffer existing: UnsafeMutableRawBufferPointer? = nil,
                     cancellation: CancellationFlag? = nil) throws(SystemCallError) -> Int64 {
        let read = { (buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int64 in
            try file.handle.readBack(ByteRange(start, max(start, end ?? Int64.max)), into: buffer,
                                     until: { cancellation?.isCancelled == true }) { _, bytes in digest.update(bytes) }
        }
        guard let existing else { return try FileDescriptor.withReadBackBuffer(read) }
        return try read(existing)
    }
}
