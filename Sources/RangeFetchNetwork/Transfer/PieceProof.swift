import RangeFetchBase

/// Which metalink pieces (``PieceDigests``) one response can prove, decided as its bytes
/// arrive in order: a piece is hashed only when the response delivers it whole, from its first
/// byte to its last, inside the segment's range as it stands. A piece the response began inside
/// (it started mid-piece), or one that a segment boundary cuts (the segment's end, which a split
/// may lower while the response runs), is not hashed here: the after-run check
/// (``PieceRounds``) reads it back.
///
/// It only plans: ``take(_:segmentEnd:)`` says which bytes go into which piece's digest and
/// where a piece ends; ``PieceHasher`` hashes them.
package struct PieceProof: Equatable {
    /// Bytes in every piece but the last.
    package let length: Int64
    /// The file's size: the last piece ends there.
    package let size: Int64
    /// File offset of the response's next byte.
    package private(set) var next: Int64
    /// The piece being hashed from its first byte, if any.
    package private(set) var hashing: Int?

    /// Bytes of the chunk that go into piece `piece`'s digest; `starts`: they begin the piece (a
    /// fresh digest), `completes`: they end it (compare).
    package struct Span: Equatable {
        package var piece: Int
        package var bytes: Range<Int>
        package var starts: Bool
        package var completes: Bool

        package init(piece: Int, bytes: Range<Int>, starts: Bool, completes: Bool) {
            self.piece = piece
            self.bytes = bytes
            self.starts = starts
            self.completes = completes
        }
    }

    /// A response whose first byte lands at file offset `start`, in a file of `size` bytes cut
    /// into pieces of `length` bytes (`length` > 0).
    package init(length: Int64, size: Int64, start: Int64) {
        self.length = max(1, length)
        self.size = size
        next = start
    }

    /// The bytes piece `index` covers: `[index × length, min(size, (index + 1) × length))`.
    package func range(_ index: Int) -> ByteRange {
        let lower = min(size, Int64(index) * length)
        return ByteRange(lower, min(size, lower + length))
    }

    /// Plans the response's next `count` bytes, the segment ending at file offset `segmentEnd`
    /// now (bytes are never taken past it).
    package mutating func take(_ count: Int, segmentEnd: Int64) -> [Span] {
        var spans: [Span] = []
        var offset = 0
        while offset < count, next < size {
            let index = Int(next / length)
            let piece = range(index)
            let taken = Int(min(Int64(count - offset), piece.upper - next))
            let starts = next == piece.lower
            if starts { hashing = index }
            let completes = next + Int64(taken) == piece.upper
            if hashing == index, piece.upper <= segmentEnd {
                spans.append(Span(piece: index, bytes: offset..<offset + taken, starts: starts, completes: completes))
            } else {
                hashing = nil // began elsewhere, or cut by the segment's end: left to the after-run check
            }
            if completes { hashing = nil }
            offset += taken
            next += Int64(taken)
        }
        next += Int64(count - offset)
        return spans
    }
}

/// What became of one piece a response delivered whole (see ``PieceProof``).
package struct PieceOutcome: Equatable {
    package var index: Int
    package var range: ByteRange
    /// Its bytes hash to the metalink's digest of it.
    package var matched: Bool

    package init(index: Int, range: ByteRange, matched: Bool) {
        self.index = index
        self.range = range
        self.matched = matched
    }
}

/// Hashes the metalink pieces one 206 delivers whole, as its bytes are handed to the writer, and
/// says which matched their digest (``PieceProof`` decides which bytes count). After the first
/// mismatch it hashes nothing more: the response is stopped and its bytes from that piece on are
/// rejected.
///
/// Costs a digest pass (SHA-256 for most metalinks) over the bytes on the engine thread, so only
/// downloads with piece digests have one. Engine thread only.
package final class PieceHasher {
    private let pieces: PieceDigests
    private var proof: PieceProof
    private var digest: Digest?
    /// The first piece that did not match.
    package private(set) var mismatch: PieceOutcome?

    /// A hasher for the response whose first byte lands at `start` in a file of `size` bytes;
    /// `nil` without piece digests or a known size.
    package init?(pieces: PieceDigests?, size: Int64?, start: Int64) {
        guard let pieces, let size, pieces.length > 0, !pieces.digests.isEmpty else { return nil }
        self.pieces = pieces
        proof = PieceProof(length: pieces.length, size: size, start: start)
    }

    /// The first byte of the piece being hashed, or of the one that failed: the response's bytes
    /// from there are not vouched for until that piece matched (they may be rejected).
    package var unprovenFrom: Int64? {
        if let mismatch { return mismatch.range.lower }
        return proof.hashing.map { proof.range($0).lower }
    }

    /// Hashes the response's next bytes (the segment ending at `segmentEnd` now); returns the
    /// pieces they completed, matched or not.
    package func update(_ bytes: UnsafeRawBufferPointer, segmentEnd: Int64) -> [PieceOutcome] {
        guard mismatch == nil else { return [] }
        var outcomes: [PieceOutcome] = []
        for span in proof.take(bytes.count, segmentEnd: segmentEnd) {
            guard pieces.digests.indices.contains(span.piece) else { continue }
            let expected = pieces.digests[span.piece]
            if span.starts { digest = Digest(expected.algorithm) }
            guard let digest else { continue }
            digest.update(UnsafeRawBufferPointer(rebasing: bytes[span.bytes]))
            guard span.completes else { continue }
            self.digest = nil
            let outcome = PieceOutcome(index: span.piece, range: proof.range(span.piece), matched: digest.finalize() == expected)
            outcomes.append(outcome)
            if !outcome.matched {
                mismatch = outcome
                break
            }
        }
        return outcomes
    }
}
