import RangeFetchBase

/// What the engine does with the bytes of a response that has ended, as their proofs decide (a
/// `Content-Digest`, see ``ContentDigestCheck``; a metalink piece it delivered whole, see
/// ``PieceHasher``): keep them, reject them and blame their source, or drop them unblamed because
/// they can never be proven.
package enum RangeProof: Equatable {
    /// Nothing proved them wrong: they count as any received bytes.
    case keep
    /// They failed their proof: the segment goes back to `start` (its writes land first, so none
    /// is counted later), the source is blamed and named in `warning`, and the range is asked
    /// again, of another source when there is one.
    case reject(from: Int64, warning: DownloadWarning, error: DownloadError)
    /// Cut by the engine at a stolen tail (split before its source was known to send digests):
    /// never provable, so not kept from `start`; the segment asks for them again, no try spent.
    case unprovable(from: Int64)

    /// The judgment on `transfer` once it has ended and its proof is settled
    /// (``SegmentTransfer/settleProof(result:)``); `userURL` is its source's URL as the user gave it.
    package init(ended transfer: SegmentTransfer, userURL: String) {
        if let piece = transfer.proofs.pieceCheck?.mismatch {
            // Stopped at its first bad piece: the pieces before it stay proven.
            let url = Redaction.url(userURL)
            let error = DownloadError(.checksumMismatch, "\(url): piece \(piece.index) (bytes \(piece.range.httpRangeSpec)) does not match the metalink's piece digest", url: url)
            self = .reject(from: piece.range.lower, warning: .pieceMismatch(url: url, piece: piece.index, range: piece.range), error: error)
        } else if case .rejectRange(let error) = transfer.finalVerdict {
            guard let check = transfer.proofs.contentCheck else {
                self = .keep
                return
            }
            let range = ByteRange(check.start, max(check.start, min(transfer.segment.state.range.upper, check.start + check.length)))
            self = .reject(from: check.start, warning: .contentDigestMismatch(url: Redaction.url(userURL), range: range), error: error)
        } else if transfer.stoppedAtSegmentEnd, transfer.proofs.proof == .unproven, let start = transfer.proofs.contentCheck?.start {
            self = .unprovable(from: start)
        } else {
            self = .keep
        }
    }
}
