/// A stream's ranges, planned only as the reorder window reaches them, small near the start.
///
/// A stream (`-o -`, a FIFO, a device) fetches pieces in order. Planning every piece up front
/// costs work and memory in proportion to the size the server claims, before a byte of it has
/// arrived: a server claiming 2^62 bytes made that 2^38 pieces, counted in a loop no signal
/// could stop. This hands out the next pieces on demand instead, by arithmetic, so the cost of
/// planning follows the bytes that actually come.
///
/// The head comes in rounds of one piece per connection: the first round's pieces are
/// `headBytes`, each round's twice the last's, up to `pieceBytes`. The reader's prefix moves at
/// one connection's rate while the first round fills, so a small first round lets it reach the
/// aggregate rate after a short start; the doubling soon makes requests large again.
///
/// The tail is even: when a round begins with no more than two rounds of full pieces left, what
/// is left is cut into two rounds of equal pieces, so the last round does not leave most
/// connections idle while a few fetch whole pieces (256 MiB after a 28 MiB head at 16
/// connections: 36 MiB as 32 pieces, not a last round of two 2 MiB pieces on 2 of 16).
///
/// | size | pieceBytes | headBytes, round | pieces handed out, in order                          |
/// |------|------------|------------------|------------------------------------------------------|
/// | 35   | 10         | 10, 1            | `[0,10)` `[10,20)`, then a tail of 2: `[20,28)` `[28,35)` |
/// | 100  | 16         | 2, 2             | `[0,2)` `[2,4)` `[4,8)` `[8,12)` `[12,20)` `[20,28)` `[28,44)` `[44,60)`, then a tail of 4 × 10 |
/// | 2^62 | 16 MiB     | 256 KiB, 16      | 16 × 256 KiB, 16 × 512 KiB, … as the window moves     |
package struct StreamPlan: Sendable, Equatable {
    /// The whole stream, bytes.
    package let size: Int64
    /// Bytes per piece once the head is behind (the last may be shorter).
    package let pieceBytes: Int64
    /// Bytes per piece of the first round (at most ``pieceBytes``).
    package let headBytes: Int64
    /// Pieces per round of the head: one per connection.
    package let round: Int64
    /// Pieces below this offset have been handed out.
    package private(set) var plannedBytes: Int64 = 0
    /// Pieces handed out so far.
    package private(set) var handedOut: Int64 = 0
    /// The tail's piece size, once the tail has begun.
    private var tailPieceBytes: Int64?

    /// - Parameters:
    ///   - headBytes: the first round's pieces; `nil`: every piece is `pieceBytes`.
    ///   - round: pieces per round of the head (the connections that start together).
    package init(size: Int64, pieceBytes: Int64, headBytes: Int64? = nil, round: Int = 1) {
        precondition(size >= 0 && pieceBytes > 0 && (headBytes ?? 1) > 0, "invalid stream plan \(size)/\(pieceBytes)")
        self.size = size
        self.pieceBytes = pieceBytes
        self.headBytes = min(headBytes ?? pieceBytes, pieceBytes)
        self.round = Int64(max(round, 1))
    }

    /// Every piece has been handed out.
    package var isExhausted: Bool { plannedBytes >= size }

    /// The size of piece number `index` (0-based), before the stream's end cuts it.
    package func pieceSize(at index: Int64) -> Int64 {
        Self.roundPieceBytes(head: headBytes, doublings: index / round, cap: pieceBytes)
    }

    /// `head` doubled `doublings` times, at most `cap`; no overflow.
    private static func roundPieceBytes(head: Int64, doublings: Int64, cap: Int64) -> Int64 {
        guard doublings < 62 else { return cap }
        let (doubled, overflow) = head.multipliedReportingOverflow(by: 1 << doublings)
        return overflow ? cap : min(doubled, cap)
    }

    /// Bytes left at or below which the tail begins: two rounds of full pieces.
    private var tailBytes: Int64 {
        let (roundBytes, overflow) = pieceBytes.multipliedReportingOverflow(by: round)
        let (twoRounds, overflowAgain) = roundBytes.multipliedReportingOverflow(by: 2)
        return overflow || overflowAgain ? .max : twoRounds
    }

    /// The tail's pieces for `left` bytes: two rounds of equal pieces (at most ``pieceBytes``).
    private func tailPiece(left: Int64) -> Int64 {
        max(1, Self.ceilingDivision(left, 2 * round))
    }

    private static func ceilingDivision(_ value: Int64, _ divisor: Int64) -> Int64 {
        value / divisor + (value % divisor == 0 ? 0 : 1)
    }

    /// How many pieces the whole stream has, without planning them: a few steps for the head's
    /// rounds (at most 63), then divisions for the full pieces and the tail.
    package var pieceCount: Int64 {
        var count: Int64 = 0
        var offset: Int64 = 0
        var doublings: Int64 = 0
        while true {
            let piece = Self.roundPieceBytes(head: headBytes, doublings: doublings, cap: pieceBytes)
            var left = size - offset
            if piece == pieceBytes {
                // Whole rounds of full pieces while more than the tail is left, then the tail's.
                if left > tailBytes {
                    let roundBytes = pieceBytes * round  // no overflow: tailBytes, twice it, did not
                    let rounds = Self.ceilingDivision(left - tailBytes, roundBytes)
                    count += rounds * round
                    left -= rounds * roundBytes
                }
                return count + Self.ceilingDivision(left, tailPiece(left: left))
            }
            let (roundBytes, overflow) = piece.multipliedReportingOverflow(by: round)
            // The stream ends in this round of the head.
            if overflow || roundBytes >= left {
                return count + Self.ceilingDivision(left, piece)
            }
            offset += roundBytes
            count += round
            doublings += 1
        }
    }

    /// The next piece's size, before the stream's end cuts it; begins the tail when its time has come.
    private mutating func nextPieceBytes() -> Int64 {
        if let tailPieceBytes { return tailPieceBytes }
        let piece = pieceSize(at: handedOut)
        let left = size - plannedBytes
        // Only at the start of a round: the rounds before it were whole.
        guard piece == pieceBytes, handedOut % round == 0, left <= tailBytes else { return piece }
        let tail = tailPiece(left: left)
        tailPieceBytes = tail
        return tail
    }

    /// The next pieces: each starting below `limit`, at most `atMost` of them. The first call
    /// hands out the first piece even when `limit` is 0, so a stream always has work.
    package mutating func pieces(below limit: Int64, atMost: Int) -> [ByteRange] {
        var pieces: [ByteRange] = []
        while pieces.count < atMost, !isExhausted, plannedBytes < limit || plannedBytes == 0 {
            // Overflow-safe near Int64.max: `size - plannedBytes` is the room left.
            let end = plannedBytes + min(nextPieceBytes(), size - plannedBytes)
            pieces.append(ByteRange(plannedBytes, end))
            plannedBytes = end
            handedOut += 1
        }
        return pieces
    }
}
