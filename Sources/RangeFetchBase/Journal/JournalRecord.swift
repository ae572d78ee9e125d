/// The resume record kept beside a partial file: which file this is and how much of each
/// segment is durably on disk. See `docs/journal-format.md`.
package struct JournalRecord: Sendable, Equatable, Codable {
    /// Format version written; a reader refuses versions it does not know.
    package static let currentVersion = 2
    /// Versions a reader takes: 1 (no block CRCs: its written bytes are taken on trust) and 2.
    package static let readableVersions = 1...2

    package var version: Int = JournalRecord.currentVersion
    /// The URL the user asked for (the identity of the download), redacted and without a signed
    /// URL's per-signature parameters (``JournalIdentity/url``): no password or signature reaches
    /// the disk.
    package var url: String
    /// ``JournalIdentity/digest``: tells apart URLs that differ only in a redacted value. Absent
    /// when the URL holds none (and in older journals, which are matched by ``url`` alone).
    package var urlDigest: String?
    /// Kept for the format's sake and always equal to ``url``: a resolved URL may carry a
    /// signature that expires (a resume re-resolves from ``url``) or a secret.
    package var finalURL: String
    package var size: Int64
    package var etag: String?
    package var lastModified: String?
    /// The segments covering `[0, size)` exactly, in ascending order, with bytes written.
    package var segments: [SegmentState]
    /// Bytes that mirrors delivered and that were not yet spot-checked against the main URL
    /// (``MirrorSpotCheck``), by mirror URL (redacted): a resume checks them before the file is
    /// declared complete. Absent in journals without mirrors (and in older ones).
    package var uncheckedMirrorBytes: [String: [ByteRange]]?
    /// The ``BlockGrid``'s block size of the segments' ``SegmentState/blocks`` (version 2).
    package var blockBytes: Int64?
    /// The metalink pieces already proven against their digests (``PieceRounds``), so a resume
    /// does not read them again. Absent when none were.
    package var verifiedPieces: VerifiedPieces?

    /// Pieces of a metalink proven against their digests.
    package struct VerifiedPieces: Sendable, Equatable, Codable {
        /// The digests' algorithm (`sha256`), piece length and ``fingerprint(of:)``: a record of
        /// other pieces is not used.
        package var algorithm: String
        package var length: Int64
        package var fingerprint: String
        /// The proven piece indices as half-open runs `[first, end)`, ascending.
        package var runs: [[Int]]

        package init(pieces: PieceDigests, indices: [Int]) {
            algorithm = pieces.digests.first?.algorithm.rawValue ?? ""
            length = pieces.length
            fingerprint = Self.fingerprint(of: pieces)
            var runs: [[Int]] = []
            for index in Set(indices).sorted() {
                if let last = runs.last, last[1] == index { runs[runs.count - 1][1] = index + 1 } else { runs.append([index, index + 1]) }
            }
            self.runs = runs
        }

        /// The SHA-256 of the piece digests, one after the other, in hex.
        package static func fingerprint(of pieces: PieceDigests) -> String {
            let digest = Digest(.sha256)
            for value in pieces.digests { digest.update(value.bytes) }
            return digest.finalize().hex
        }

        /// Whether this records proofs against `pieces` (same algorithm, length and digests).
        package func describes(_ pieces: PieceDigests) -> Bool {
            algorithm == (pieces.digests.first?.algorithm.rawValue ?? "") && length == pieces.length
                && fingerprint == Self.fingerprint(of: pieces)
        }

        /// Whether piece `index` is among the proven.
        package func contains(_ index: Int) -> Bool {
            runs.contains { $0.count == 2 && $0[0] <= index && index < $0[1] }
        }
    }

    package init(file: FileIdentity, size: Int64, segments: [SegmentState]) {
        let identity = JournalIdentity(file.url)
        url = identity.url
        urlDigest = identity.digest
        finalURL = url
        self.size = size
        etag = file.etag
        lastModified = file.lastModified
        self.segments = segments
        blockBytes = BlockGrid(fileSize: size).blockBytes
    }

    /// The grid of the segments' block CRCs; `nil` in a version 1 record.
    package var blockGrid: BlockGrid? { blockBytes.map(BlockGrid.init(blockBytes:)) }

    /// Bytes the record claims are on disk.
    package var writtenBytes: Int64 { segments.writtenBytes }

    /// Of mirrors' bytes not yet spot-checked (`unchecked`, by mirror URL), those `segments`
    /// hold: a mirror's bytes received but not yet recorded as written are fetched again on a
    /// resume, so they are not the ones to check (a check of them would pass on the main URL's
    /// bytes and let the mirror's recorded zeros through unchecked).
    package static func heldMirrorBytes(_ unchecked: [String: [ByteRange]], in segments: [SegmentState]) -> [String: [ByteRange]] {
        let written = segments.writtenRanges
        return unchecked.compactMapValues { extents in
            let held = ByteRange.clipped(extents, to: written)
            return held.isEmpty ? nil : held
        }
    }

    /// Whether `file` is the same file, in the same version, this record describes.
    package func matches(_ file: FileIdentity) -> Bool {
        names(file) && file.size == size && file.etag == etag && file.lastModified == lastModified
    }

    /// Whether this record is of a download of `file`'s URL (``JournalIdentity``), whatever the
    /// version of the file. A record written before identities left signatures out names the URL
    /// by its redacted text, and is taken as such.
    package func names(_ file: FileIdentity) -> Bool {
        let identity = JournalIdentity(file.url)
        if identity.url == url { return urlDigest == nil || urlDigest == identity.digest }
        return urlDigest == nil && Redaction.url(file.url) == url
    }
}
