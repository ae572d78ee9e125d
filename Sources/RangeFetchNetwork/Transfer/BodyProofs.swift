import RangeFetchBase

/// What a 206's body is proven by as it lands: its own `Content-Digest` (``ContentDigestCheck``)
/// and the metalink pieces it delivers whole (``PieceHasher``). Both start at the first byte of
/// a ranged 206 whose head was accepted (``begin(head:at:)``).
package struct BodyProofs {
    /// The metalink's piece digests, when the download has them (set before the first byte).
    package var pieces: PieceDigests?
    /// The file's size, for the last piece's end.
    package let fileSize: Int64?
    /// Hashes the content of a 206 that carries a `Content-Digest` (from its first byte).
    package private(set) var contentCheck: ContentDigestCheck?
    /// What the `Content-Digest` proved, once the response has ended (``settle(deliveredWhole:)``);
    /// `nil` while it runs or when it carried none.
    package private(set) var proof: ContentProof?
    /// Hashes the pieces a 206 delivers whole, when ``pieces`` are known.
    package private(set) var pieceCheck: PieceHasher?

    package init(fileSize: Int64?) {
        self.fileSize = fileSize
    }

    /// Starts the proofs of the 206 whose head is `head`, its first byte landing at `offset`.
    package mutating func begin(head: ResponseHead, at offset: Int64) {
        contentCheck = ContentDigestCheck(head: head, start: offset)
        pieceCheck = PieceHasher(pieces: pieces, size: fileSize, start: offset)
    }

    /// Hashes the response's next bytes (its segment ending at `segmentEnd` now); returns the
    /// pieces they proved, and whether one failed (the response stops there).
    /// (Mutating, though the hashers are objects: called on the stored value, it is not copied.)
    package mutating func update(_ bytes: UnsafeRawBufferPointer, segmentEnd: Int64) -> (proven: [PieceOutcome], badPiece: Bool) {
        contentCheck?.update(bytes)
        guard let pieceCheck else { return ([], false) }
        let proven = pieceCheck.update(bytes, segmentEnd: segmentEnd).filter(\.matched)
        return (proven, pieceCheck.mismatch != nil)
    }

    /// Where the segment's bytes stop being vouched for while the response runs: its first
    /// byte's offset when it carries a `Content-Digest` not checked yet, else `nil`. A journal
    /// record must not claim bytes past it (a mismatch would reject them).
    package var unprovenFrom: Int64? { proof == nil ? contentCheck?.start : nil }

    /// Where the segment's bytes stop being vouched for by a journal record, a digest following
    /// the written prefix or a stream: ``unprovenFrom``, or the first byte of the metalink piece
    /// being hashed (its bytes are written before its last one shows it good or bad).
    package var unvouchedFrom: Int64? {
        switch (unprovenFrom, pieceCheck?.unprovenFrom) {
        case let (content?, piece?): min(content, piece)
        case let (content, piece): content ?? piece
        }
    }

    /// Settles what the `Content-Digest` proved, once the response has ended; `deliveredWhole`:
    /// cleanly, with every announced byte taken. Only the first call counts.
    package mutating func settle(deliveredWhole: Bool) {
        guard let contentCheck, proof == nil else { return }
        proof = contentCheck.outcome(deliveredWhole: deliveredWhole)
    }
}
