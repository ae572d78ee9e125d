import RangeFetchBase
import RangeFetchNetwork

/// A download's rounds of piece checks (``DownloadOptions/pieceDigests``): after each run every
/// piece not yet proven is checked, the sources of a bad one are named (a mirror is dropped for
/// the rest of the download), and only the bad pieces are fetched again, at most
/// ``maximumRounds`` times.
struct PieceRounds {
    /// The piece digests; `nil`: nothing to check.
    let digests: Metalink.Pieces?
    /// The pieces still to check (all of them before the first run).
    private var unproven: [Int]?
    /// Refetch rounds taken so far.
    private(set) var rounds = 0
    /// The pieces that failed the last check.
    private(set) var lastBad: [(index: Int, range: ByteRange)] = []

    /// Rounds of refetching bad pieces before the download fails.
    static let maximumRounds = 3

    init(digests: Metalink.Pieces?) {
        self.digests = digests
    }

    /// Rounds that take the pieces `proven` by an earlier run (a resumed journal's) as proven,
    /// those of them wholly inside the written bytes of `resumed` (a file of `size` bytes): a
    /// piece with bytes still to fetch is checked again.
    init(digests: Metalink.Pieces?, proven: JournalRecord.VerifiedPieces?, resumed: [SegmentState], size: Int64) {
        self.digests = digests
        guard let digests, let proven, proven.describes(digests) else { return }
        let written = resumed.filter { $0.written > 0 }.map { ByteRange($0.range.lower, $0.range.lower + $0.written) }
            .sorted { $0.lower < $1.lower }
        unproven = digests.digests.indices.filter { index in
            guard proven.contains(index) else { return true }
            let range = digests.range(index, size: size)
            var end = range.lower
            for extent in written where extent.lower <= end && extent.upper > end { end = extent.upper }
            return end < range.upper
        }
    }

    /// The pieces proven so far, as a journal records them; `nil` when none are.
    var verified: JournalRecord.VerifiedPieces? {
        guard let digests, let unproven else { return nil }
        let open = Set(unproven)
        let proven = digests.digests.indices.filter { !open.contains($0) }
        return proven.isEmpty ? nil : JournalRecord.VerifiedPieces(pieces: digests, indices: proven)
    }

    /// Takes the pieces `indices` as proven: the engine checked them as they arrived, all their
    /// bytes are written, so the next check does not read them back.
    mutating func prove(_ indices: [Int]) {
        guard let digests, !indices.isEmpty else { return }
        let proven = Set(indices)
        unproven = (unproven ?? Array(digests.digests.indices)).filter { !proven.contains($0) }
    }

    /// Takes the pieces overlapping bytes `plan` fetches again as unproven.
    mutating func forget(refetching plan: [SegmentState], size: Int64) {
        guard let digests, var open = unproven else { return }
        let refetched = plan.filter { !$0.isComplete }.map(\.remaining)
        for index in digests.digests.indices where !open.contains(index) {
            let range = digests.range(index, size: size)
            if refetched.contains(where: { $0.lower < range.upper && range.lower < $0.upper }) { open.append(index) }
        }
        unproven = open.sorted()
    }

    /// Whether the last check found bad pieces after ``maximumRounds`` refetches.
    var exhausted: Bool { rounds > Self.maximumRounds }

    /// Checks the unproven pieces of `file`; returns the plan that fetches the bad ones again,
    /// or `nil` when every piece matches. Each bad piece is warned about, naming the mirrors that
    /// sent bytes of it (dropped from `mirrors` for the rest of the download) or the main URL.
    mutating func refetch(file: PartialFile, size: Int64, mirrorExtents: [String: [ByteRange]], mainURL: String,
                          mirrors: MirrorAgreement, cancellation: CancellationFlag,
                          emit: (DownloadEvent) -> Void) throws(DownloadError) -> [SegmentState]? {
        guard let digests else { return nil }
        let indices = unproven ?? Array(digests.digests.indices)
        let bad = try PieceCheck.badPieces(digests, indices: indices, file: file, size: size, cancellation: cancellation)
        unproven = bad
        lastBad = bad.map { ($0, digests.range($0, size: size)) }
        guard !bad.isEmpty else { return nil }
        rounds += 1
        for (index, range) in lastBad {
            let blamed = PieceCheck.blame(range, mirrorExtents: mirrorExtents)
            for source in blamed.isEmpty ? [mainURL] : blamed {
                emit(.warning(.pieceMismatch(url: Redaction.url(source), piece: index, range: range)))
            }
            blamed.forEach(mirrors.distrust)
        }
        return SegmentState.reopening(size: size, extents: lastBad.map(\.range))
    }

    /// The error once the rounds are spent: which pieces never matched.
    func failure(path: String) -> DownloadError {
        let shown = lastBad.prefix(5).map { "\($0.index) (bytes \($0.range.httpRangeSpec))" }.joined(separator: ", ")
        return DownloadError(.checksumMismatch, "\(path): \(lastBad.count) piece(s) still do not match the metalink's piece digests after \(Self.maximumRounds) refetches: \(shown)\(lastBad.count > 5 ? ", ..." : "")")
    }
}
