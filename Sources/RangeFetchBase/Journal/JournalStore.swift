#if canImport(Glibc)
import Glibc
#endif

/// The journal file on disk, replaced atomically: write `PATH.tmp`, `fsync` it, `rename` it over
/// `PATH`, `fsync` the directory. A crash at any point leaves the old record or the new one.
///
/// Both names are used relative to the directory's descriptor and never through a symbolic link
/// (``DirectoryHandle``): the temporary file is created new (`O_EXCL | O_NOFOLLOW`, whatever was
/// at its name removed first), and a journal is read only when it is this user's own file.
package struct JournalStore: Sendable {
    package let path: String
    private var temporaryPath: String { path + ".tmp" }
    /// The largest journal read: a larger file is no journal of ours.
    package static let maximumBytes = 64 << 20

    package enum Loaded {
        case missing
        case unreadable(String)
        case record(JournalRecord)
    }

    package func load() -> Loaded {
        let descriptor: Int32
        do {
            let (directory, name) = try DirectoryHandle.holding(path)
            switch try directory.openExisting(name, flags: O_RDONLY) {
            case .missing: return .missing
            case .refused(let trust): return .unreadable(trust.problem(at: path) ?? path)
            case .own(let opened): descriptor = opened
            }
        } catch {
            return error.errno == ENOENT ? .missing : .unreadable("cannot open \(path): \(String(cString: strerror(error.errno)))")
        }
        let file = FileDescriptor(descriptor, path: path)
        defer { file.close() }
        let bytes: [UInt8]
        do {
            // One byte past the limit, so that a larger file is told apart from one at it.
            bytes = try file.read(upTo: Self.maximumBytes + 1)
        } catch {
            return .unreadable("cannot read \(path): \(String(cString: strerror(error.errno)))")
        }
        if bytes.count > Self.maximumBytes { return .unreadable("\(path) is too large to be a journal") }
        do {
            return .record(try JournalCodec.decode(bytes))
        } catch {
            return .unreadable("\(path): \(error)")
        }
    }

    /// Durably replaces the journal with `record`.
    package func write(_ record: JournalRecord) throws(SystemCallError) {
        let bytes = JournalCodec.encode(record)
        let temporary = temporaryPath
        let (directory, name) = try DirectoryHandle.holding(path)
        let temporaryName = FileSystem.baseName(of: temporary)
        let descriptor: Int32
        do {
            descriptor = try directory.createNew(temporaryName, flags: O_WRONLY, mode: 0o600)
        } catch where error.errno == EEXIST {
            // Left by a crash before its rename, or put there by someone else: the entry itself
            // goes (a link is removed, not followed), and ours is created in its place.
            try directory.remove(temporaryName)
            descriptor = try directory.createNew(temporaryName, flags: O_WRONLY, mode: 0o600)
        }
        let file = FileDescriptor(descriptor, path: temporary)
        defer { file.close() }
        try file.writeAll(bytes)
        try file.synchronize()
        try directory.durableRename(temporaryName, to: name)
    }

    package func remove() {
        unlink(path)
        unlink(temporaryPath)
    }

    package init(path: String) {
        self.path = path
    }
}
