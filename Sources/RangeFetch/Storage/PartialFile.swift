#if canImport(Glibc)
import Glibc
#endif
import CFileShims

/// The file that receives a download's bytes before it is complete (`NAME.part`).
///
/// Writes go to absolute offsets (`pwrite`), so ranges can land in any order. The file is
/// preallocated to its final size so a full disk shows up at the start, not in the middle.
/// Not thread-safe for ``close()``; `write(_:at:)` and `synchronize()` may run on different
/// threads at once (they are plain syscalls on the same descriptor).
final class PartialFile: @unchecked Sendable {
    let path: String
    private(set) var descriptor: Int32

    /// Opens (creating if needed) the file at `path` for reading and writing.
    /// - Parameter truncate: start from an empty file.
    init(path: String, truncate: Bool) throws(SystemCallError) {
        self.path = path
        let flags = O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0)
        descriptor = try SystemCall.check("open", path: path) { open(path, flags, 0o644) }
    }

    /// Opens an existing file read-only (for verification).
    init(path: String, readOnly: Bool) throws(SystemCallError) {
        precondition(readOnly)
        self.path = path
        let flags = O_RDONLY | O_CLOEXEC
        descriptor = try SystemCall.check("open", path: path) { open(path, flags, 0o644) }
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Current size of the file in bytes (`fstat`).
    func size() throws(SystemCallError) -> Int64 {
        var info = stat()
        try SystemCall.check("fstat", path: path) { fstat(descriptor, &info) }
        return Int64(info.st_size)
    }

    /// Makes the file `size` bytes long, reserving disk blocks with `fallocate` where the file
    /// system supports it (so `ENOSPC` surfaces now), else as a sparse file via `ftruncate`.
    func preallocate(size: Int64) throws(SystemCallError) {
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

    /// Writes all of `bytes` at `offset` (`pwrite`, looping over short writes).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemCallError) {
        var done = 0
        while done < bytes.count {
            let written = try SystemCall.check("pwrite", path: path) {
                pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            done += written
        }
    }

    /// Reads up to `buffer.count` bytes at `offset` (`pread`); returns how many were read.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemCallError) -> Int {
        try SystemCall.check("pread", path: path) {
            pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
        }
    }

    /// Makes everything written so far durable (`fdatasync`).
    func synchronize() throws(SystemCallError) {
        try SystemCall.check("fdatasync", path: path) { fdatasync(descriptor) }
    }

    /// Asks the kernel to start writing dirty pages back now (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`), without waiting, so the next `fdatasync` has little left to do.
    /// Best effort: errors are ignored (the next `fdatasync` reports real ones).
    func startWriteback() {
        _ = cfs_start_writeback(descriptor, 0, 0)
    }

    /// Sets the file's size exactly (`ftruncate`), for downloads of unknown length.
    func truncate(to size: Int64) throws(SystemCallError) {
        try SystemCall.check("ftruncate", path: path) { ftruncate(descriptor, off_t(size)) }
    }

    /// Takes an exclusive advisory lock (`flock`) without waiting; `false` when another process
    /// holds it.
    func tryLock() throws(SystemCallError) -> Bool {
        do {
            try SystemCall.check("flock", path: path) { flock(descriptor, LOCK_EX | LOCK_NB) }
            return true
        } catch where error.errno == EWOULDBLOCK {
            return false
        }
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }
}
