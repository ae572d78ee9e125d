/// Checks an S3 composite (multipart) checksum against a file on disk: each part's checksum
/// (parts of the given sizes, in order), then the same algorithm over their bytes joined.
package enum CompositeChecksumCheck {
    /// The composite checksum of `file`'s parts of `partSizes` bytes, or `nil` when cancelled.
    package static func compute(_ algorithm: DigestAlgorithm, file: PartialFile, partSizes: [Int64],
                        cancellation: CancellationFlag? = nil) throws(SystemCallError) -> DigestValue? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileDigester.readBytes, alignment: 4096)
        defer { buffer.deallocate() }
        var joined: [UInt8] = []
        var offset: Int64 = 0
        for size in partSizes {
            let digest = MultiDigest([algorithm])
            let end = offset + size
            offset = try FileDigester.hash(file, from: offset, to: end, into: digest, buffer: buffer, cancellation: cancellation)
            guard offset == end, cancellation?.isCancelled != true else { return nil }
            joined += digest.finalize().first?.bytes ?? []
        }
        let outer = Digest(algorithm)
        outer.update(joined)
        return outer.finalize()
    }

    /// Checks every composite checksum of `composites` whose part sizes are known; returns the
    /// values that matched, with their sources, for `verified` events.
    /// - Throws: `.checksumMismatch` naming the header and both values; `.cancelled`.
    package static func verify(_ composites: [CompositeChecksum], file: PartialFile, path: String,
                       cancellation: CancellationFlag?) throws(DownloadError) -> [(DigestValue, String)] {
        var verified: [(DigestValue, String)] = []
        for composite in composites {
            guard let sizes = composite.partSizes, let want = DigestValue(algorithm: composite.algorithm, hex: composite.hex) else { continue }
            let got = try DownloadError.withSystemCalls { () throws(SystemCallError) in
                try compute(composite.algorithm, file: file, partSizes: sizes, cancellation: cancellation)
            }
            guard let got else { throw .cancelled() }
            let source = "server's \(composite.header) header, composite of \(sizes.count) parts"
            guard got == want else {
                throw DownloadError(.checksumMismatch, "\(path): \(want.algorithm.rawValue) mismatch (\(source)): expected \(want.hex)-\(sizes.count), got \(got.hex)-\(sizes.count)")
            }
            verified.append((want, source))
        }
        return verified
    }
}
