import RangeFetchBase
import RangeFetchNetwork

/// Refuses a batch entry whose expected path (``BatchEntry/expectedPath(defaultDirectory:)``) an
/// earlier entry already has, with the memory of a fingerprint per path, so a list of millions is
/// checked as it streams by.
///
/// The guarantee is exact: entries given up front are compared by path; a listed entry (a prefix's
/// object, a list's line) whose fingerprint was seen before is compared against the earlier
/// objects by listing their prefixes again, and against the earlier lines by reading the list
/// again from its start, or the copy `ManifestReader` keeps of a pipe's (a fingerprint collision of
/// distinct paths is rare: ``PathFingerprints``). Only when there is no copy (no room for it) is
/// such an entry refused as a possible duplicate, saying so.
struct DistinctPaths {
    /// Where entries without `dir=` go (the batch's directory).
    let defaultDirectory: String
    private var fingerprints = PathFingerprints()
    /// Paths of the entries given before the list (few), exactly.
    private var given: [String: BatchEntry] = [:]
    /// Listed entries checked so far.
    private var listed = 0

    init(defaultDirectory: String) {
        self.defaultDirectory = defaultDirectory
    }

    /// Where an entry being checked comes from, in the batch's order: given, a prefix's object,
    /// or a line of the list.
    enum Arrival {
        /// Given up front: its path is kept exactly.
        case given
        /// An object of a listed prefix: earlier objects are found by listing again.
        case object
        /// The list's next line, with a file holding the list's lines so far, if any.
        case listed((path: String, source: String)?)

        var isObject: Bool {
            if case .object = self { true } else { false }
        }
    }

    /// Records `entry`'s path, or throws a usage error naming it and the earlier entry with the
    /// same path. `arrival.listed` carries a file holding the list's lines so far
    /// (`ManifestReader.rereadable`); `earlierObject(path)` is the first prefix object checked
    /// before `entry` that is saved at `path` (prefixes are listed again to tell, which only a
    /// fingerprint shared with an earlier path asks for).
    mutating func check(_ entry: BatchEntry, arrival: Arrival,
                        earlierObject: (String) throws(DownloadError) -> BatchEntry?) throws(DownloadError) {
        let path = entry.expectedPath(defaultDirectory: defaultDirectory)
        let fromList: Bool
        if case .listed = arrival { fromList = true } else { fromList = false }
        defer { if fromList { listed += 1 } }
        if fingerprints.insert(path) {
            if case .given = arrival { given[path] = entry }
            return
        }
        if let first = given[path] { throw Self.duplicate(entry, first, path) }
        switch arrival {
        case .given:
            return // a collision among given entries, whose paths all differ
        case .object:
            if let first = try earlierObject(path) { throw Self.duplicate(entry, first, path) }
        case .listed(let list):
            if let first = try earlierObject(path) { throw Self.duplicate(entry, first, path) }
            guard let list else {
                throw DownloadError(.invalidOption, "\(Manifest.describe(entry)) would be saved as \(path), which an earlier line of the list may name too: the list came through a pipe and no copy of it could be kept in the temporary directory to tell for sure; save the list to a file, or give this entry another name with out=")
            }
            if let first = try Self.earlier(in: list, withPath: path, before: listed, defaultDirectory: defaultDirectory) {
                throw Self.duplicate(entry, first, path)
            }
        }
    }

    /// The first of the list's first `count` entries saved at `path`, read from the list again.
    private static func earlier(in list: (path: String, source: String), withPath path: String, before count: Int,
                                defaultDirectory: String) throws(DownloadError) -> BatchEntry? {
        let reader = try ManifestReader(path: list.path, source: list.source, keepsCopy: false)
        for _ in 0..<count {
            guard let entry = try reader.next() else { return nil }
            if entry.expectedPath(defaultDirectory: defaultDirectory) == path { return entry }
        }
        return nil
    }

    static func duplicate(_ entry: BatchEntry, _ first: BatchEntry, _ path: String) -> DownloadError {
        DownloadError(.invalidOption, "\(Manifest.describe(entry)) and \(Manifest.describe(first)) would both be saved as \(path); give one of them another name with out=")
    }
}
