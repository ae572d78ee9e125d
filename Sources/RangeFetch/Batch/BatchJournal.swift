import RangeFetchBase
import RangeFetchNetwork
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The batch journal: `DIR/.rangefetch-batch` in the batch's directory, one ``BatchRecord`` line
/// per entry finished (verified, renamed into place, the rename durable). A rerun skips an entry
/// whose record still matches the file on disk without asking its server anything, so a rerun of
/// a finished list of a million files makes no request.
///
/// What a skip trusts is the disk, not the server: the record says the download left this file
/// (same size, mtime, ctime, inode, device) for this URL, path and expected digests. A file the
/// server changed since is not noticed (``BatchOptions/recheck`` asks the servers again).
///
/// Crash safety: a record is appended with one `write` only once the file it describes is
/// durably in place (its data `fdatasync`ed, the rename and its directory `fsync`ed), so no record
/// can outlive a crash that its file did not. Records are not synced one by one (that was one
/// `fdatasync` more per file, a third of a small file's syncs): the journal is `fdatasync`ed when
/// the batch ends, and a crash may lose the last records, whose entries are then asked about
/// again, never trusted wrongly. A torn last line fails its checksum and is ignored. Later
/// records win over earlier ones.
///
/// Several processes (`--shard K/N` on one machine) share one journal: it is opened `O_APPEND`,
/// and each record is one `write` of a whole line, which Linux appends at the end as one piece on
/// a local file system; every record checks itself, so one that did interleave would be ignored.
///
/// The file is opened relative to the directory, never through a symbolic link, and only when it
/// is this user's regular file with one link (``DirectoryHandle/openExisting(_:flags:)``); it is
/// created owner-only (`0600`) with the first record, and made so if it is not. It holds no
/// URL's password, query or signature (``BatchKey`` is a hash; the URL kept for humans is
/// redacted).
///
/// Memory: the records are loaded into a dictionary from the 128-bit ``BatchKey`` to a 64-bit
/// hash of the ``FileStamp`` (per process, with the standard library's seeded hasher), about
/// 50 bytes a record with the table's spare room. Measured (release build, 2 cores): a journal of
/// a million records (316 MB) loads in about 2.5 s.
final class BatchJournal: Sendable {
    /// The journal's name in the batch's directory.
    static let fileName = ".rangefetch-batch"
    /// A line longer than this is no record (paths and URLs are bounded far below).
    static let maximumLineBytes = 64 << 10

    let path: String
    private let directory: String
    /// The open journal; `nil` until the first record when there was none (a batch that finishes
    /// nothing, a bad list, leaves no journal behind).
    private let file: Mutex<Int32?>
    private let finished: [BatchKey: Int]
    /// Lines that were not records (torn, damaged), counted when loading.
    let ignoredLines: Int
    /// Why appending stopped working; nothing more is appended then.
    private let writeFailure = Mutex<SystemCallError?>(nil)

    private init(directory: String, path: String, descriptor: Int32?, finished: [BatchKey: Int], ignoredLines: Int) {
        self.directory = directory
        self.path = path
        file = Mutex(descriptor)
        self.finished = finished
        self.ignoredLines = ignoredLines
    }

    /// The records appended are made durable as the batch ends (see the crash safety above).
    deinit {
        file.withLock { descriptor in
            guard let descriptor else { return }
            _ = fdatasync(descriptor)
            close(descriptor)
        }
    }

    /// What opening the journal found.
    enum Opened {
        case journal(BatchJournal)
        /// No journal is used, for `reason` (a link or another user's file at its name, an
        /// unreadable directory).
        case unused(path: String, reason: String)
    }

    /// Opens the journal of `directory`, whose records are loaded when `loading` (with
    /// ``BatchOptions/recheck`` they are only appended to); a missing one (or directory) is
    /// created with the first record.
    /// - Throws: ``DownloadError/cancelled()`` once `cancellation` is set while the records load
    ///   (asked every MiB read: a journal of millions takes seconds, and Ctrl-C must not wait).
    static func open(directory: String, loading: Bool, cancellation: CancellationFlag? = nil) throws(DownloadError) -> Opened {
        let path = directory.hasSuffix("/") ? directory + fileName : directory + "/" + fileName
        let descriptor: Int32
        do {
            switch try existing(directory: directory, path: path) {
            case .own(let opened): descriptor = opened
            case .refused(let trust): return .unused(path: path, reason: trust.problem(at: path) ?? path)
            case .missing: return .journal(BatchJournal(directory: directory, path: path, descriptor: nil, finished: [:], ignoredLines: 0))
            }
        } catch {
            return .unused(path: path, reason: error.description)
        }
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & 0o077 != 0 { _ = fchmod(descriptor, 0o600) }
        guard let (finished, ignored, endsInNewline) = load(descriptor, keeping: loading, cancellation: cancellation) else {
            close(descriptor)
            throw DownloadError.cancelled()
        }
        // A torn last line is ended, so that the next record starts a line of its own.
        if !endsInNewline { _ = [UInt8(ascii: "\n")].withUnsafeBytes { write(descriptor, $0.baseAddress, 1) } }
        return .journal(BatchJournal(directory: directory, path: path, descriptor: descriptor, finished: finished, ignoredLines: ignored))
    }

    /// The journal already in `directory`, opened for reading and appending when it is ours.
    private static func existing(directory: String, path: String) throws(SystemCallError) -> DirectoryHandle.Existing {
        let handle: DirectoryHandle
        do {
            handle = try DirectoryHandle(directory)
        } catch where error.errno == ENOENT {
            return .missing
        }
        return try handle.openExisting(fileName, flags: O_RDWR | O_APPEND)
    }

    /// The journal's descriptor, the file created (`0600`, never through a link) when there is
    /// none yet, or opened when another process (a shard) created it first.
    private func descriptor() throws(SystemCallError) -> Int32 {
        try file.withLock { (file: inout Int32?) throws(SystemCallError) -> Int32 in
            if let file { return file }
            let handle = try DirectoryHandle(directory)
            let created: Int32
            do throws(SystemCallError) {
                created = try handle.createNew(Self.fileName, flags: O_RDWR | O_APPEND, mode: 0o600)
            } catch where error.errno == EEXIST {
                switch try handle.openExisting(Self.fileName, flags: O_RDWR | O_APPEND) {
                case .own(let opened): created = opened
                case .refused(let trust): throw SystemCallError(function: "open", path: path, errno: trust.errno)
                case .missing: throw SystemCallError(function: "open", path: path, errno: ENOENT)
                }
            }
            file = created
            return created
        }
    }

    /// Records read: key to stamp hash; lines ignored; whether the file is empty or ends a line.
    /// `nil` once `cancellation` is set (looked at before each chunk).
    private static func load(_ descriptor: Int32, keeping: Bool, cancellation: CancellationFlag?) -> ([BatchKey: Int], Int, Bool)? {
        var finished: [BatchKey: Int] = [:]
        // Room for every record at once (a record is ~300 bytes): no rehashing while loading, and
        // no old and new table side by side at the peak.
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return ([:], 0, true) }
        guard keeping else {
            // Only whether the last line is whole matters to a journal only appended to.
            var last = UInt8(ascii: "\n")
            if info.st_size > 0 { _ = pread(descriptor, &last, 1, info.st_size - 1) }
            return ([:], 0, last == UInt8(ascii: "\n"))
        }
        finished.reserveCapacity(Int(min(info.st_size / 256, 1 << 26)))
        var ignored = 0
        var pending: [UInt8] = []
        var skippingLongLine = false
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        var last: UInt8 = UInt8(ascii: "\n")
        let file = FileDescriptor(descriptor, path: fileName)
        while true {
            if cancellation?.isCancelled == true { return nil }
            let count = (try? chunk.withUnsafeMutableBytes { (bytes) throws(SystemCallError) in
                try file.read(fromAbsoluteOffset: offset, into: bytes)
            }) ?? 0
            guard count > 0 else { break } // a failed read ends the records like the file's end
            offset += Int64(count)
            last = chunk[count - 1]
            var start = 0
            while start < count {
                guard let newline = chunk[start..<count].firstIndex(of: UInt8(ascii: "\n")) else {
                    if !skippingLongLine { pending += chunk[start..<count] }
                    if pending.count > maximumLineBytes { pending = []; skippingLongLine = true }
                    break
                }
                if skippingLongLine {
                    skippingLongLine = false
                    ignored += 1
                } else if pending.isEmpty {
                    take(chunk[start..<newline], into: &finished, ignored: &ignored)
                } else {
                    pending += chunk[start..<newline]
                    take(pending[...], into: &finished, ignored: &ignored)
                    pending = []
                }
                start = newline + 1
            }
        }
        // A last line without its newline is torn: ignored.
        if !pending.isEmpty || skippingLongLine { ignored += 1 }
        return (finished, ignored, last == UInt8(ascii: "\n"))
    }

    private static func take(_ line: ArraySlice<UInt8>, into finished: inout [BatchKey: Int], ignored: inout Int) {
        guard !line.isEmpty else { return }
        if let (key, stamp) = BatchRecord.decodeStamp(line) {
            finished[key] = stamp.hashValue
        } else {
            ignored += 1
        }
    }

    /// Records loaded.
    var count: Int { finished.count }

    /// Whether the record of `key` says the download left exactly the file `stamp` describes.
    /// Whether any record of `key` was read (before its file is looked at: most entries of a
    /// first run have none).
    func hasRecord(_ key: BatchKey) -> Bool {
        finished[key] != nil
    }

    func isFinished(_ key: BatchKey, stamp: FileStamp) -> Bool {
        finished[key] == stamp.hashValue
    }

    /// Appends `record` (one `write` of the whole line; see the type's crash safety).
    /// - Returns: the failure, the first time appending fails; `nil` when it worked, and when it
    ///   failed before (nothing more is appended once a write failed).
    func append(_ record: BatchRecord) -> SystemCallError? {
        guard writeFailure.withLock({ $0 == nil }) else { return nil }
        let line = record.line
        let outcome = Result { () throws(SystemCallError) in
            let descriptor = try descriptor()
            let written = try FileDescriptor(descriptor, path: path).write(line)
            // A short write leaves a torn line, which the next reader ignores.
            guard written == line.count else { throw SystemCallError(function: "write", path: path, errno: ENOSPC) }
        }
        guard case .failure(let error) = outcome else { return nil }
        return writeFailure.withLock { failure in
            defer { failure = failure ?? error }
            return failure == nil ? error : nil
        }
    }
}
