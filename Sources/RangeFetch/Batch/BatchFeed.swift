import RangeFetchBase
import RangeFetchNetwork
import Synchronization

/// Hands a batch's entries to its workers one at a time, in order: the given ones, then the
/// prefixes' objects as their listings reach them (a page at a time, ``PrefixLister``), then the
/// list's as the reader reaches them. Every entry is checked (its line, its path distinct from
/// every earlier one); only the shard's are handed out, numbered from 0 in the order handed out.
///
/// A malformed line, a duplicate path, an unreadable list or a listing that fails stops the feed:
/// it hands out nothing more and keeps the error in ``failure`` (the files handed out before it go on).
final class BatchFeed: Sendable {
    private struct State {
        var given: [BatchEntry]
        var nextGiven = 0
        /// The prefixes' listers, in order; `nextLister` is the one being read.
        var listers: [PrefixLister]
        var nextLister = 0
        /// Entries the listers gave (every shard's).
        var objects = 0
        var reader: ManifestReader?
        var paths: DistinctPaths
        /// Entries handed out.
        var handedOut = 0
        /// Entries read from the list (every shard's).
        var listed = 0
        var failure: DownloadError?
        /// Every entry was read.
        var exhausted = false
    }

    private let state: Mutex<State>
    private let shard: ShardSelector?
    private let checksumList: String?
    private let defaultDirectory: String
    /// Whether entries may come beyond the given ones.
    let streams: Bool
    /// Entries given up front.
    let givenCount: Int

    /// Opens `input`'s list (a usage error naming it when it cannot be opened) and prepares its
    /// prefixes' listings, signed as `options` say (no page is asked for yet); once
    /// `cancellation` is set, a wait for the list's next bytes or a listing page ends and the feed
    /// hands out nothing more.
    convenience init(_ input: BatchInput, defaultDirectory: String, options: DownloadOptions = DownloadOptions(),
                     s3: S3ConfigurationOnce? = nil, cancellation: CancellationFlag = CancellationFlag()) throws(DownloadError) {
        let s3 = s3 ?? S3ConfigurationOnce(given: options.s3)
        var listers: [PrefixLister] = []
        for prefix in input.prefixes {
            let source = try ResolvedSource(prefix: prefix, request: options.request, s3: s3)
            listers.append(try PrefixLister.s3(source, cancellation: cancellation, pageSize: input.listingPageSize))
        }
        try self.init(input, listers: listers, defaultDirectory: defaultDirectory, cancellation: cancellation)
    }

    /// A feed of `input`'s entries, `listers`' objects (in place of `input.prefixes`) and list.
    init(_ input: BatchInput, listers: sending [PrefixLister], defaultDirectory: String,
         cancellation: CancellationFlag = CancellationFlag()) throws(DownloadError) {
        let reader = try input.listPath.map { path throws(DownloadError) in try ManifestReader(path: path) }
        reader?.isCancelled = { cancellation.isCancelled }
        let paths = DistinctPaths(defaultDirectory: defaultDirectory)
        streams = reader != nil || !listers.isEmpty
        shard = input.shard
        checksumList = input.checksumList
        self.defaultDirectory = defaultDirectory
        givenCount = input.entries.count
        state = Mutex(State(given: input.entries, listers: listers, reader: reader, paths: paths))
    }

    /// The list's failure, once the feed has stopped on one.
    var failure: DownloadError? { state.withLock { $0.failure } }

    /// Whether every entry has been read (else the batch stopped before the end of the list).
    var isExhausted: Bool { state.withLock { $0.exhausted } }

    /// The next entry of this shard and its number, or `nil` when there is none (the end, or a failure).
    func next() -> (index: Int, entry: BatchEntry)? {
        state.withLock { state in
            guard state.failure == nil else { return nil }
            do throws(DownloadError) {
                while let (entry, arrival) = try Self.read(&state) {
                    // Objects checked before this entry, found again by listing their prefixes.
                    let listers = state.listers
                    let objectsBefore = state.objects - (arrival.isObject ? 1 : 0)
                    let directory = defaultDirectory
                    try state.paths.check(entry, arrival: arrival) { path throws(DownloadError) in
                        try PrefixLister.earlier(among: listers, withPath: path, before: objectsBefore, defaultDirectory: directory)
                    }
                    guard shard?.includes(entry.url) ?? true else { continue }
                    defer { state.handedOut += 1 }
                    return (state.handedOut, try withChecksum(entry))
                }
                state.exhausted = true
                if let reader = state.reader, state.listed == 0, state.given.isEmpty, state.objects == 0 {
                    throw DownloadError(.invalidOption, "\(reader.source) lists no URLs")
                }
                return nil
            } catch {
                // A stopped batch is not a bad list: the files under way report the stop.
                if error.category != .interrupted { state.failure = error }
                return nil
            }
        }
    }

    /// The next entry, given, a prefix's object or listed, every shard's.
    private static func read(_ state: inout State) throws(DownloadError) -> (BatchEntry, DistinctPaths.Arrival)? {
        if state.nextGiven < state.given.count {
            defer { state.nextGiven += 1 }
            return (state.given[state.nextGiven], .given)
        }
        while state.nextLister < state.listers.count {
            if let entry = try state.listers[state.nextLister].next() {
                state.objects += 1
                return (entry, .object)
            }
            state.nextLister += 1
        }
        guard let entry = try state.reader?.next() else { return nil }
        state.listed += 1
        return (entry, .listed(state.reader?.rereadable))
    }

    /// `entry` with the checksum list's digest for its file when it has none of its own.
    private func withChecksum(_ entry: BatchEntry) throws(DownloadError) -> BatchEntry {
        guard let checksumList, entry.checksums.isEmpty else { return entry }
        let path = entry.expectedPath(defaultDirectory: defaultDirectory)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        var entry = entry
        if let digest = try ChecksumSpec.entry(in: checksumList, forFileNamed: name) { entry.checksums = [digest] }
        return entry
    }
}
