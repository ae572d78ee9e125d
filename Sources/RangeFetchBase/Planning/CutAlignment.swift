/// Where a cut through a range lands. With a metalink's piece digests a cut falls on a piece
/// boundary, so that each piece still arrives whole in one response and is proven as it arrives
/// (a piece cut by a segment boundary waits for the after-run check, and a bad one is fetched
/// again only after the run). Otherwise, or when no piece boundary lies inside the range, it
/// falls on the file's write alignment. A pure rule, tested as a table.
///
/// | range `(lower, upper)` and wanted offset        | cut                                   |
/// |-------------------------------------------------|---------------------------------------|
/// | pieces, a boundary in `(lower, offset]`         | the highest such boundary             |
/// | pieces, none there but one in `(offset, upper)` | the lowest such boundary              |
/// | no pieces, or no boundary inside                | `offset` rounded down to `writeBytes` |
/// | that rounds to `lower` or below                 | `offset` itself                       |
package struct CutAlignment: Sendable, Equatable {
    /// The file's write alignment.
    package var writeBytes: Int64 = 4096
    /// A metalink's piece length; `nil`: the download has no piece digests.
    package var pieceBytes: Int64?

    /// `offset` (inside `(lower, upper)`) moved onto a boundary strictly inside the range.
    package func cut(_ offset: Int64, lower: Int64, upper: Int64) -> Int64 {
        if let piece = pieceBytes, piece > 0 {
            let below = offset / piece * piece
            if below > lower { return below }
            let above = below + piece
            if above < upper { return above }
        }
        let aligned = offset / max(1, writeBytes) * max(1, writeBytes)
        return aligned > lower ? aligned : offset
    }

    package init(writeBytes: Int64 = 4096, pieceBytes: Int64? = nil) {
        self.writeBytes = writeBytes
        self.pieceBytes = pieceBytes
    }
}
