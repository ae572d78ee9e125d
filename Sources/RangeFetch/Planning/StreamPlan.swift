/// A stream's ranges, planned only as the reorder window reaches them.
///
/// A stream (`-o -`, a FIFO, a device) fetches fixed pieces in order. Planning every piece up
/// front costs work and memory in proportion to the size the server claims, before a byte of it
/// has arrived: a server claiming 2^62 bytes made that 2^38 pieces, counted in a loop no signal
/// could stop. This hands out the next pieces on demand instead, by arithmetic, so the cost of
/// planning follows the bytes that actually come.
///
/// | size | pieceBytes | pieces(below: 0, atMost: 4) | then pieces(below: 40, atMost: 10) |
/// |------|------------|-----------------------------|------------------------------------|
/// | 35   | 10         | `[0,10)`                    | `[10,20)` `[20,30)` `[30,35)`      |
/// | 2^62 | 16 MiB     | `[0,16 MiB)`                | none more (40 < 16 MiB)            |
struct StreamPlan: Sendable, Equatable {
    /// The whole stream, bytes.
    let size: Int64
    /// Bytes per piece (the last may be shorter).
    let pieceBytes: Int64
    /// Pieces below this offset have been handed out.
    private(set) var plannedBytes: Int64 = 0

    init(size: Int64, pieceBytes: Int64) {
        precondition(size >= 0 && pieceBytes > 0, "invalid stream plan \(size)/\(pieceBytes)")
        self.size = size
        self.pieceBytes = pieceBytes
    }

    /// Every piece has been handed out.
    var isExhausted: Bool { plannedBytes >= size }

    /// How many pieces the whole stream has, without planning them.
    var pieceCount: Int64 { size / pieceBytes + (size % pieceBytes == 0 ? 0 : 1) }

    /// The next pieces: each starting below `limit`, at most `atMost` of them. The first call
    /// hands out the first piece even when `limit` is 0, so a stream always has work.
    mutating func pieces(below limit: Int64, atMost: Int) -> [ByteRange] {
        var pieces: [ByteRange] = []
        while pieces.count < atMost, !isExhausted, plannedBytes < limit || plannedBytes == 0 {
            // Overflow-safe near Int64.max: `size - plannedBytes` is the room left.
            let end = plannedBytes + min(pieceBytes, size - plannedBytes)
            pieces.append(ByteRange(plannedBytes, end))
            plannedBytes = end
        }
        return pieces
    }
}
