import RangeFetchBase
import RangeFetchNetwork

/// Which mirrors a download checks against its main URL, and when: the first ones at once, the
/// backups one at a time, each only when an agreed mirror is dropped (aria2c uses the first few
/// URLs and keeps the rest the same way). A pure value, tested as a table.
///
/// | event                               | result                                       |
/// |-------------------------------------|----------------------------------------------|
/// | start                               | ``first``: given mirrors, then duplicates    |
/// | an agreed mirror is dropped         | the next backup, checked first, or `nil`     |
/// | a URL never agreed is "dropped"     | `nil` (nothing to replace)                   |
/// | every backup taken                  | `nil`: requests stay bounded                 |
///
/// So at most ``first`` plus ``backups`` mirrors are ever checked: with the caps per document
/// (``Metalink/maximumLocations``, ``LinkHeader/maximumDuplicates`` and their backups) a metalink
/// of 3,000 URLs costs a few dozen small requests, not thousands.
struct MirrorCandidates: Sendable, Equatable {
    /// Checked at once, in parallel, when the download starts.
    private(set) var first: [String]
    /// Kept back; the next is checked whenever an agreed mirror is dropped.
    private(set) var backups: [String]
    /// Mirrors that agreed and are in use (only these are replaced when dropped).
    private(set) var agreed: Set<String> = []

    /// - Parameters:
    ///   - main: the main URL, never its own mirror.
    ///   - given: the mirrors given (`--mirror`, a metalink's best locations), checked first.
    ///   - duplicates: the main URL's `rel=duplicate` links, checked first after `given`.
    ///   - backups: held back: a metalink's locations past its cap, then duplicates past theirs.
    init(main: String, given: [String], duplicates: [String] = [], backups: [String] = []) {
        var seen: Set<String> = [main]
        first = (given + duplicates).filter { seen.insert($0).inserted }
        self.backups = backups.filter { seen.insert($0).inserted }
    }

    var isEmpty: Bool { first.isEmpty && backups.isEmpty }

    /// `url` agreed with the main URL and serves ranges now.
    mutating func noteAgreed(_ url: String) {
        agreed.insert(url)
    }

    /// `url` was dropped (it failed, refused or crawled): the backup to check in its place, or
    /// `nil` when `url` was not an agreed mirror or no backup is left.
    mutating func replace(dropped url: String) -> String? {
        guard agreed.remove(url) != nil, !backups.isEmpty else { return nil }
        return backups.removeFirst()
    }
}
