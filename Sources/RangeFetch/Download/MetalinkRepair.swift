#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// What `verify FILE --metalink F.meta4` found, and with `repair` what it fetched.
public struct MetalinkVerification: Sendable, Equatable {
    /// The pieces checked (0 when the metalink has no piece digests).
    public var pieceCount: Int
    /// The pieces that did not match and were fetched again (empty without repair or when all matched).
    public var repairedPieces: [Int]
    /// Bytes of the ranges requested for the bad pieces, over every source tried (probes not counted).
    public var fetchedBytes: Int64
    /// The whole-file digests that matched.
    public var verified: [DigestValue]
}

/// Whether a file on disk can be checked (and repaired) against a metalink at all: a pure
/// decision, made before a byte is read or fetched.
enum MetalinkFileCheck {
    /// The largest piece fetched for a repair: a fetched piece is checked whole before any of
    /// it is written into the file.
    static let maximumPieceBytes: Int64 = 64 << 20

    /// `nil` when `path` (of `fileSize` bytes) can be checked against `metalink` (and repaired,
    /// with `repair`); else the error that says why not.
    static func problem(path: String, fileSize: Int64, metalink: Metalink, repair: Bool) -> DownloadError? {
        guard let size = metalink.size else {
            return DownloadError(.invalidOption, "the metalink for \(metalink.name) gives no <size>, so \(path) cannot be checked piece by piece or repaired")
        }
        guard fileSize == size else {
            return DownloadError(.checksumMismatch, "\(path) is \(fileSize) bytes, not the \(size) bytes the metalink describes; it was not changed (a file of the wrong size is not repaired: download it again)")
        }
        if repair {
            guard let pieces = metalink.pieces else {
                return DownloadError(.invalidOption, "the metalink for \(metalink.name) has no piece digests (<pieces>), so the bad parts of \(path) cannot be told apart; nothing was changed")
            }
            guard pieces.length <= maximumPieceBytes else {
                return DownloadError(.invalidOption, "the metalink's pieces are \(pieces.length) bytes, over the \(maximumPieceBytes >> 20) MiB a repair fetches at once; \(path) was not changed")
            }
        } else if metalink.pieces == nil && metalink.digests.isEmpty {
            return DownloadError(.invalidOption, "the metalink for \(metalink.name) gives neither a whole-file <hash> nor <pieces> to check \(path) against")
        }
        return nil
    }

    /// The error for pieces that do not match: how many, and their byte ranges (the first ten).
    static func badPiecesFailure(path: String, bad: [(index: Int, range: ByteRange)], of count: Int, after what: String) -> DownloadError {
        let shown = bad.prefix(10).map { "\($0.index) (bytes \($0.range.httpRangeSpec))" }.joined(separator: ", ")
        return DownloadError(.checksumMismatch, "\(path): \(bad.count) of \(count) pieces do not match the metalink's piece digests\(what): \(shown)\(bad.count > 10 ? ", ..." : "")")
    }
}

/// `verify FILE --metalink F.meta4 [--repair]`: checks a complete file's size, pieces and
/// whole-file digests; a repair fetches only the bad pieces' ranges, source after source (the
/// metalink's URLs in priority order, each probed: its size must be the metalink's), into a
/// nameless spool beside the file, and writes a fetched piece into the file (`pwrite`, then
/// `fdatasync`) only once its digest matches. The rest of the file is never written: a crash
/// leaves every piece either as it was or repaired.
struct MetalinkRepair {
    let path: String
    let metalink: Metalink
    let options: DownloadOptions
    let cancellation: CancellationFlag
    let emit: @Sendable (DownloadEvent) -> Void

    func run(repair: Bool) throws(DownloadError) -> MetalinkVerification {
        let file = try PartialFile(existingAt: path, writable: repair)
        defer { file.close() }
        if repair {
            guard try DownloadError.withSystemCalls({ () throws(SystemCallError) in try file.tryLock() }) else {
                throw DownloadError(.busy, "\(path) is in use by another rangefetch process; it was not repaired (run the repair again once that process is done)")
            }
            if PartialFile.isLockedByAnother(path + ".part") {
                throw DownloadError(.busy, "\(path).part is being downloaded by another rangefetch process, which will replace \(path); it was not repaired (check it again once that download is done)")
            }
        }
        let fileSize = try DownloadError.withSystemCalls { () throws(SystemCallError) in try file.size() }
        if let problem = MetalinkFileCheck.problem(path: path, fileSize: fileSize, metalink: metalink, repair: repair) {
            throw problem
        }
        var repaired: [Int] = []
        var fetched: Int64 = 0
        if let pieces = metalink.pieces {
            let bad = try PieceCheck.badPieces(pieces, indices: Array(pieces.digests.indices), file: file, size: fileSize,
                                               cancellation: cancellation)
            if !bad.isEmpty && !repair {
                throw failure(bad, of: pieces, size: fileSize, after: "")
            }
            if !bad.isEmpty {
                (repaired, fetched) = try self.repair(bad, of: pieces, size: fileSize, in: file)
            }
        }
        var verified: [DigestValue] = []
        if !metalink.digests.isEmpty {
            let actual = try FileDigester.digests(ofFileAt: path, algorithms: metalink.digests.map(\.algorithm), cancellation: cancellation)
            try DigestCheck.compare(expected: metalink.digests.map { ($0, "the metalink's <hash>") }, actual: actual, path: path)
            verified = actual
        }
        return MetalinkVerification(pieceCount: metalink.pieces?.digests.count ?? 0, repairedPieces: repaired,
                                    fetchedBytes: fetched, verified: verified)
    }

    /// Fetches the `bad` pieces from each source in turn until they all match, writing each
    /// into `file` as it comes right; then checks every piece of `file` again. Returns the
    /// pieces repaired and the bytes fetched.
    /// - Throws: `checksumMismatch` naming the pieces no source sent right (and what went wrong
    ///   with each source); `cancelled`.
    private func repair(_ bad: [Int], of pieces: Metalink.Pieces, size: Int64,
                        in file: PartialFile) throws(DownloadError) -> (repaired: [Int], fetched: Int64) {
        var left = bad
        var fetched: Int64 = 0
        var sourceProblems: [String] = []
        for (number, location) in metalink.locations.enumerated() where !left.isEmpty {
            let shown = Redaction.url(location.url)
            do {
                let (stillBad, bytes) = try fetch(left, of: pieces, size: size, from: location.url, into: file)
                fetched += bytes
                if !stillBad.isEmpty {
                    sourceProblems.append("\(shown) sent bytes that do not match")
                    if number + 1 < metalink.locations.count {
                        for index in stillBad {
                            emit(.warning(.pieceMismatch(url: shown, piece: index, range: pieces.range(index, size: size))))
                        }
                    }
                }
                left = stillBad
            } catch where error.code == .cancelled {
                throw DownloadError(.cancelled, "interrupted while repairing \(path); the pieces repaired so far are in place, the others as they were")
            } catch {
                sourceProblems.append(error.message)
            }
        }
        let repaired = bad.filter { !left.contains($0) }
        if !left.isEmpty {
            let error = failure(left, of: pieces, size: size, after: " after trying each of its \(metalink.locations.count) URL(s)")
            throw error.with(message: "\(error.message) (\(sourceProblems.joined(separator: "; "))); \(repaired.count) other piece(s) were repaired, the rest of the file is unchanged")
        }
        // Checked again from the file itself: what was written is what is there.
        let after = try PieceCheck.badPieces(pieces, indices: Array(pieces.digests.indices), file: file, size: size,
                                             cancellation: cancellation)
        guard after.isEmpty else {
            throw failure(after, of: pieces, size: size, after: " after the repair (did something else change the file?)")
        }
        return (repaired, fetched)
    }

    private func failure(_ bad: [Int], of pieces: Metalink.Pieces, size: Int64, after what: String) -> DownloadError {
        MetalinkFileCheck.badPiecesFailure(path: path, bad: bad.map { ($0, pieces.range($0, size: size)) },
                                           of: pieces.digests.count, after: what)
    }

    /// Fetches the ranges of `bad` pieces from `url` alone into a spool, and writes each piece
    /// whose digest matches into `file`, durably. Returns the pieces still bad and the bytes fetched.
    private func fetch(_ bad: [Int], of pieces: Metalink.Pieces, size: Int64, from url: String,
                       into file: PartialFile) throws(DownloadError) -> (stillBad: [Int], bytes: Int64) {
        let loop = try CurlLoop()
        var sourceOptions = options
        sourceOptions.mirrors = []
        // One connection per bad range, never cut for another: the bytes of a cut range already
        // in flight would be sent twice, and a repair is about fetching as little as possible.
        sourceOptions.minimumSplitBytes = 1 << 50
        let rangeCount = SegmentState.reopening(size: size, extents: bad.map { pieces.range($0, size: size) }).count
        sourceOptions.connections = .fixed(max(1, min(rangeCount, 16)))
        let source = try ResolvedSource(object: url, request: sourceOptions.request, s3: S3ConfigurationOnce(given: sourceOptions.s3))
        let bound = sourceOptions.bound(to: source)
        let resolver = SourceResolver(source: source, options: bound, cancellation: cancellation, loop: loop,
                                      sharing: nil, emit: emit)
        var remote = try resolver.probe()
        remote.duplicates = []
        guard remote.size == size else {
            throw DownloadError(.checksumMismatch, "\(Redaction.url(url)) serves \(remote.size.map(String.init) ?? "an unknown number of") bytes, not the \(size) bytes the metalink describes; nothing was fetched from it", url: url)
        }
        guard remote.isSegmentable else {
            throw DownloadError(.rangesNotHonoured, "\(Redaction.url(url)) does not serve byte ranges; nothing was fetched from it", url: url)
        }
        // Beside the file (its file system has room for what it replaces), else in /tmp when
        // its directory cannot be written to.
        let spool = try DownloadError.withSystemCalls { () throws(SystemCallError) in
            do {
                return try PartialFile(anonymousIn: FileSystem.directoryName(of: path))
            } catch {
                return try PartialFile(anonymousIn: "/tmp")
            }
        }
        defer { spool.close() }
        let ranges = bad.map { pieces.range($0, size: size) }
        let segments = SegmentState.reopening(size: size, extents: ranges)
        let mirrors = MirrorAgreement(url: source.requestURL, options: bound, cancellation: cancellation, loop: loop, emit: emit)
        let engines = EngineBuilder(options: bound, cancellation: cancellation, loop: loop, sharing: nil,
                                    mirrors: mirrors, emit: emit)
        let engine = engines.makeEngine(remote: remote, size: size, segments: segments, mode: .ranged, file: spool,
                                        checkpointer: nil, follow: { _ in })
        try engine.run()
        let bytes = ranges.reduce(Int64(0)) { $0 + $1.count }
        let stillBad = try PieceCheck.badPieces(pieces, indices: bad, file: spool, size: size, cancellation: cancellation)
        let good = bad.filter { !stillBad.contains($0) }
        guard !good.isEmpty else { return (stillBad, bytes) }
        try DownloadError.withSystemCalls { () throws(SystemCallError) in
            try FileDescriptor.withReadBackBuffer { (buffer) throws(SystemCallError) in
                for index in good {
                    let range = pieces.range(index, size: size)
                    let reached = try spool.handle.readBack(range, into: buffer) { (offset, bytes) throws(SystemCallError) in
                        try file.write(bytes, at: offset)
                    }
                    guard reached == range.upper else { throw SystemCallError(function: "pread", path: spool.path, errno: EIO) }
                }
            }
            try file.synchronize()
        }
        return (stillBad, bytes)
    }
}

extension Downloader {
    /// Checks the complete file at `path` against `metalink`: its size, every piece digest and
    /// the whole-file digests. With `repair`, the pieces that do not match are fetched again
    /// from the metalink's URLs (only their byte ranges, each source in turn, each piece written
    /// into the file only once its digest matches) and the whole file is checked again.
    /// `path` is followed if it is a symbolic link, but a repair never writes through a link to
    /// another user's file, nor into a file another rangefetch has locked.
    /// - Throws: `.checksum` naming the bad pieces (count and byte ranges) when some do not match
    ///   (without `repair`, or still after trying every URL), or the file is of another size
    ///   (then it is never changed); `.usage` for a metalink without size, or without pieces for
    ///   a repair.
    public func verify(fileAt path: String, metalink: Metalink, repair: Bool,
                       events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }) async throws(DownloadError) -> MetalinkVerification {
        let options = self.options
        let cancellation = CancellationFlag()
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> MetalinkVerification in
            try MetalinkRepair(path: path, metalink: metalink, options: options, cancellation: cancellation, emit: events)
                .run(repair: repair)
        }
    }
}
