#if canImport(Glibc)
import Glibc
#endif
import CFileShims
import Synchronization

/// The file that receives a download's bytes before it is complete (`NAME.part`).
///
/// Writes go to absolute offsets (`pwrite`), so ranges can land in any order. The file is
/// preallocated to its final size so a full disk shows up at the start, not in the middle.
/// Not thread-safe for ``close()``; `write(_:at:)` and `synchronize()` may run on different
/// threads at once (they are plain syscalls on the same descriptor).
///
/// Whole aligned blocks are written with `O_DIRECT` where the file system allows it, straight
/// from the caller's buffer to the disk: no page-cache copy (the kernel time that made loopback
/// runs bimodal on this VM, where fresh page-cache pages fault in at the host), no dirty pages
/// for checkpoints and the final `fdatasync` to flush. Partial blocks at a write's edges go
/// through the page cache on the ordinary descriptor; the two never touch the same block.
package final class PartialFile: @unchecked Sendable {
    package let path: String
    package private(set) var descriptor: Int32
    /// A second descriptor opened with `O_DIRECT`, or -1 where that is not supported (tmpfs).
    /// Set before the first write; closed only by ``close()``, so a write lane never meets it
    /// closed (or its number reused for another file).
    private var directDescriptor: Int32 = -1
    /// Set by any write lane once the device refused a direct write (`EINVAL`): every lane uses
    /// the page cache from then on.
    private let directRefused = Atomic<Bool>(false)

    /// Offsets, lengths and buffer addresses of direct writes are multiples of this.
    package static let directAlignment = 4096

    /// The directory the file was created or found in, held open so it is renamed relative to
    /// it; `nil` for a spool or a file opened read-only.
    private let directory: DirectoryHandle?
    /// Whether this process created the file (else it resumed one checked to be ours alone).
    package private(set) var created = false

    /// Creates the file at `path` for reading and writing, or takes over the one already there
    /// (a partial download to resume) when it is this user's own regular file with no other
    /// link. Never follows a symbolic link at `path`: see ``DirectoryHandle`` for why.
    /// - Parameters:
    ///   - privateMode: create it readable by its owner only (0600), for downloads that carry
    ///     credentials; an existing file's mode is left as it is.
    ///   - held: the directory `path` is in, already open (a batch's files share it); used when
    ///     its path is the directory part of `path`, else the directory is opened anew.
    /// - Throws: a file-system error naming `path` and what is wrong when something else is
    ///   there (a link, another user's file, a file with other links, a FIFO); nothing was
    ///   written to it.
    package init(path: String, privateMode: Bool = false, in held: DirectoryHandle? = nil) throws(DownloadError) {
        self.path = path
        let mode: mode_t = privateMode ? 0o600 : 0o644
        let (directory, name): (DirectoryHandle, String)
        do {
            if let held, held.path == FileSystem.directoryName(of: path) {
                (directory, name) = (held, FileSystem.baseName(of: path))
            } else {
                (directory, name) = try DirectoryHandle.holding(path)
            }
        } catch {
            throw error.downloadError
        }
        self.directory = directory
        var opened: Int32 = -1
        // An entry that vanishes between the failed create and the open is looked at again.
        for _ in 0..<3 where opened < 0 {
            let existing: DirectoryHandle.Existing
            do {
                opened = try directory.createNew(name, flags: O_RDWR, mode: mode)
                created = true
                break
            } catch where error.errno == EEXIST {
                do {
                    existing = try directory.openExisting(name, flags: O_RDWR)
                } catch {
                    throw error.downloadError
                }
            } catch {
                throw error.downloadError
            }
            switch existing {
            case .own(let descriptor): opened = descriptor
            case .missing: continue
            case .refused(let trust):
                throw DownloadError(.fileSystem(errno: trust.errno),
                                    "\(trust.problem(at: path) ?? path), so it is not used as the partial download and nothing was written to it",
                                    remedy: .removeStrayFile)
            }
        }
        guard opened >= 0 else {
            throw DownloadError(.fileSystem(errno: EAGAIN), "\(path) kept appearing and vanishing while it was opened; another process is changing it")
        }
        descriptor = opened
    }

    /// A spool with no name in `directory` (`O_TMPFILE`, else a created and at once removed
    /// file): what a stream's ranges land in before they go out in order. It vanishes with its
    /// descriptor, so nothing is left behind whatever happens.
    package init(anonymousIn directory: String) throws(SystemCallError) {
        path = "\(directory) (spool of the stream)"
        self.directory = nil
        let anonymous = cfs_open_anonymous(directory)
        if anonymous >= 0 {
            descriptor = anonymous
            return
        }
        var template = Array((directory + "/.rangefetch-spool-XXXXXX").utf8CString)
        descriptor = try SystemCall.check("mkstemp", path: directory) {
            template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    }

    /// Starts writing whole aligned blocks with `O_DIRECT` (see the type's notes) through a
    /// second descriptor reopened from the first (`/proc/self/fd`), never by path: whatever the
    /// name points to by now, both write the same file. Silently keeps the page cache where the
    /// file system refuses it.
    package func enableDirectWrites() {
        guard directDescriptor < 0, descriptor >= 0 else { return }
        directDescriptor = cfs_reopen_direct_write(descriptor)
    }

    /// Whether whole aligned blocks go to the disk directly (``enableDirectWrites()`` took).
    package var writesDirectly: Bool { directDescriptor >= 0 }

    /// Opens an existing file read-only (for verification).
    package init(path: String, readOnly: Bool) throws(SystemCallError) {
        precondition(readOnly)
        self.path = path
        directory = nil
        let flags = O_RDONLY | O_CLOEXEC
        descriptor = try SystemCall.check("open", path: path) { open(path, flags, 0o644) }
    }

    /// Opens a complete file the user named, to check (and with `writable`, repair) it in place.
    /// The name is followed if it is a symbolic link (the user chose it), but a writable open
    /// refuses a link to a file another user owns (checked after the open, so a link planted
    /// meanwhile is caught too), and anything that is not a regular file (opened non-blocking,
    /// so a FIFO does not hang the open).
    /// - Throws: a file-system error naming `path`; nothing was written.
    package init(existingAt path: String, writable: Bool) throws(DownloadError) {
        self.path = path
        directory = nil
        // A writable open follows a link at the name only as -o does (``LinkFollowRule``:
        // never another user's link in a sticky directory anyone can write to), then opens
        // what it found without following, so a link planted meanwhile is not written through.
        let target = writable ? try FileSystem.followingLinks(path, refusal: "nothing was repaired; name the file it points to if that is the one to repair", remedy: nil) : path
        let opened = open(target, (writable ? O_RDWR | O_NOFOLLOW : O_RDONLY) | O_CLOEXEC | O_NONBLOCK)
        guard opened >= 0 else {
            throw SystemCallError(function: "open", path: path, errno: errno).downloadError
        }
        descriptor = opened
        var info = stat()
        guard fstat(opened, &info) == 0 else {
            throw SystemCallError(function: "fstat", path: path, errno: errno).downloadError
        }
        switch FileTrust(info) {
        case .notRegular, .symbolicLink:
            throw DownloadError(.fileSystem(errno: EINVAL), "\(path) is not a regular file; nothing was read or written")
        case .ownedBy(let uid) where writable:
            // Looked at after the open, so a link planted meanwhile is seen: the name must be
            // this very file, not a link to it.
            var entry = stat()
            let named = lstat(path, &entry) == 0 && entry.st_mode & S_IFMT == S_IFREG
                && entry.st_dev == info.st_dev && entry.st_ino == info.st_ino
            guard named else {
                throw DownloadError(.fileSystem(errno: EPERM), "\(path) is a symbolic link to a file owned by uid \(uid), not by this user; it is not written through")
            }
        default:
            break
        }
    }

    /// Whether another process holds the lock (``tryLock()``) of the file at `path`, a link
    /// there never followed; `false` when there is no such file.
    package static func isLockedByAnother(_ path: String) -> Bool {
        let opened = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard opened >= 0 else { return false }
        defer { Glibc.close(opened) }
        return flock(opened, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    deinit {
        close()
    }

    /// Current size of the file in bytes (`fstat`).
    package func size() throws(SystemCallError) -> Int64 {
        var info = stat()
        try SystemCall.check("fstat", path: path) { fstat(descriptor, &info) }
        return Int64(info.st_size)
    }

    /// Makes the file `size` bytes long, reserving disk blocks with `fallocate` where the file
    /// system supports it (so `ENOSPC` surfaces now), else as a sparse file via `ftruncate`.
    package func preallocate(size: Int64) throws(SystemCallError) {
        guard size > 0 else { return }
        do {
            try SystemCall.check("fallocate", path: path) { cfs_fallocate(descriptor, 0, off_t(size)) }
        } catch where error.errno == EOPNOTSUPP || error.errno == ENOSYS || error.errno == EINVAL {
            // Fall through to a sparse file.
        }
        if try self.size() != size {
            try SystemCall.check("ftruncate", path: path) { ftruncate(descriptor, off_t(size)) }
        }
    }

    /// Writes all of `bytes` at `offset` (`pwrite`, looping over short writes). With direct
    /// writes on, the aligned middle goes to disk directly when `bytes` sits at an address that
    /// is congruent to `offset` modulo ``directAlignment`` (callers arrange their buffers so).
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemCallError) {
        guard directDescriptor >= 0, !directRefused.load(ordering: .relaxed), let base = bytes.baseAddress else {
            return try write(bytes, at: offset, through: descriptor)
        }
        let alignment = Int64(Self.directAlignment)
        let end = offset + Int64(bytes.count)
        let first = (offset + alignment - 1) / alignment * alignment
        let last = end / alignment * alignment
        let congruent = (Int64(Int(bitPattern: base)) - offset) % alignment == 0
        guard congruent, first < last else {
            return try write(bytes, at: offset, through: descriptor)
        }
        let head = Int(first - offset)
        let middle = Int(last - first)
        try write(UnsafeRawBufferPointer(start: base, count: head), at: offset, through: descriptor)
        do {
            try write(UnsafeRawBufferPointer(start: base + head, count: middle), at: first, through: directDescriptor,
                      function: Self.directWriteCall)
        } catch where error.errno == EINVAL {
            // The device wants a larger alignment than ours: use the page cache from now on.
            directRefused.store(true, ordering: .relaxed)
            try write(UnsafeRawBufferPointer(start: base + head, count: middle), at: first, through: descriptor)
        }
        try write(UnsafeRawBufferPointer(start: base + head + middle, count: bytes.count - head - middle), at: last,
                  through: descriptor)
    }

    /// The name direct writes go by in errors and ``FaultInjection`` (`RANGEFETCH_FAULT=pwrite(O_DIRECT):22`).
    package static let directWriteCall = "pwrite(O_DIRECT)"

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, through fd: Int32,
                       function: String = "pwrite") throws(SystemCallError) {
        try FileDescriptor(fd, path: path).write(toAbsoluteOffset: offset, bytes, call: function)
    }

    /// The file's descriptor as a ``FileDescriptor`` naming ``path`` in errors: for reading it
    /// back (``FileDescriptor/readBack(_:into:until:_:)``).
    package var handle: FileDescriptor { FileDescriptor(descriptor, path: path) }

    /// Reads up to `buffer.count` bytes at `offset` (`pread`); returns how many were read.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemCallError) -> Int {
        try handle.read(fromAbsoluteOffset: offset, into: buffer)
    }

    /// Makes everything written so far durable (`fdatasync`).
    package func synchronize() throws(SystemCallError) {
        try handle.synchronizeData()
    }

    /// Asks the kernel to start writing dirty pages back now (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`), without waiting, so the next `fdatasync` has little left to do.
    /// Best effort: errors are ignored (the next `fdatasync` reports real ones).
    package func startWriteback() {
        _ = cfs_start_writeback(descriptor, 0, 0)
    }

    /// Gives a file created private (``init(path:privateMode:)``) the mode any new file gets
    /// (0666 less the umask), once it is complete: the secret was in the journal's URL, not in
    /// the file's bytes. Only a file this process created, or one it resumed (checked to be
    /// this user's alone) that still has the 0600 a private creation gave it; any other mode
    /// is left as it is.
    package func restoreUsualMode() throws(SystemCallError) {
        if !created {
            var info = stat()
            try SystemCall.check("fstat", path: path) { fstat(descriptor, &info) }
            guard info.st_mode & 0o7777 == 0o600 else { return }
        }
        let mode = 0o666 & ~FileSystem.umask
        try SystemCall.check("fchmod", path: path) { fchmod(descriptor, mode) }
    }

    /// Gives the file the name `destination` (`renameat` from the directory it was opened in;
    /// an entry at `destination`, a link included, is replaced, never followed), durably unless
    /// `synchronizingDirectory` is false (``SyncGroup`` syncs a group's directories once).
    /// Checks first that its name still names this very file, so a file put in its place
    /// meanwhile (in a directory others can write to) is never the one moved into place.
    package func rename(to destination: String, synchronizingDirectory: Bool = true) throws(DownloadError) {
        guard let directory else { throw DownloadError(.fileSystem(errno: EINVAL), "\(path) has no name to rename") }
        let name = FileSystem.baseName(of: path)
        guard directory.names(name, file: descriptor) else {
            throw DownloadError(.fileSystem(errno: ESTALE), "\(path) was removed or replaced by another file during the download; nothing was moved to \(destination)")
        }
        do {
            // Into the same directory: through its descriptor both times, so the rename lands in
            // the directory ``synchronizeDirectory(containing:)`` syncs, even one moved meanwhile.
            if directory.path == FileSystem.directoryName(of: destination) {
                let newName = FileSystem.baseName(of: destination)
                try SystemCall.check("rename", path: destination) { renameat(directory.descriptor, name, directory.descriptor, newName) }
            } else {
                try SystemCall.check("rename", path: destination) { renameat(directory.descriptor, name, AT_FDCWD, destination) }
            }
            if synchronizingDirectory { try synchronizeDirectory(containing: destination) }
        } catch {
            throw error.downloadError
        }
    }

    /// `fsync`s the directory holding `destination`: the one this file was created in, through
    /// the descriptor held open, when it is that one; else opened by its path.
    package func synchronizeDirectory(containing destination: String) throws(SystemCallError) {
        guard let directory, directory.path == FileSystem.directoryName(of: destination) else {
            return try FileSystem.synchronizeDirectory(containing: destination)
        }
        try SystemCall.check("fsync", path: directory.path) { fsync(directory.descriptor) }
    }

    /// Frees the disk blocks of `[offset, offset + length)` (the file keeps its size; the range
    /// reads as zeros). Best effort: where the file system cannot, the blocks stay.
    package func release(from offset: Int64, length: Int64) {
        guard length > 0 else { return }
        _ = cfs_punch_hole(descriptor, off_t(offset), off_t(length))
    }

    /// Sets the file's size exactly (`ftruncate`), for downloads of unknown length.
    package func truncate(to size: Int64) throws(SystemCallError) {
        try SystemCall.check("ftruncate", path: path) { ftruncate(descriptor, off_t(size)) }
    }

    /// Takes an exclusive advisory lock (`flock`) without waiting; `false` when another process
    /// holds it.
    package func tryLock() throws(SystemCallError) -> Bool {
        do {
            try SystemCall.check("flock", path: path) { flock(descriptor, LOCK_EX | LOCK_NB) }
            return true
        } catch where error.errno == EWOULDBLOCK {
            return false
        }
    }

    package func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        if directDescriptor >= 0 { Glibc.close(directDescriptor) }
        descriptor = -1
        directDescriptor = -1
    }
}
