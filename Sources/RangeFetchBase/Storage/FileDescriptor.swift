#if canImport(Glibc)
import Glibc
#endif

/// An open file's descriptor and the raw calls made on it, each through ``SystemCall``: a call
/// a signal interrupted (`EINTR`) is made again, and a failure throws a ``SystemCallError``
/// naming the C call, ``path`` and errno. Modelled on swift-system's `FileDescriptor`
/// (`read(fromAbsoluteOffset:into:retryOnInterrupt:)`) with the retry always on: nothing here
/// wants an interrupted call to fail. Tests inject failures by the C call's name
/// (``FaultInjection``, `RANGEFETCH_FAULT=pwrite:28`).
///
/// | method                               | C call underneath       | gives                                   |
/// |--------------------------------------|-------------------------|-----------------------------------------|
/// | ``read(into:)``                      | `read`                  | bytes read, 0 at the end                |
/// | ``read(fromAbsoluteOffset:into:)``   | `pread`                 | bytes read, 0 at or past the end        |
/// | ``read(upTo:)``                      | `read` until the end    | at most `limit` bytes, fewer at the end |
/// | ``readBack(_:into:until:_:)``        | `pread` by chunks       | a range's chunks, in order, to a closure |
/// | ``write(_:)``                        | `write`, once           | bytes written (may be fewer)            |
/// | ``writeAll(_:)``                     | `write` until all       | every byte, or throws                   |
/// | ``write(toAbsoluteOffset:_:call:)``  | `pwrite` until all      | every byte, or throws                   |
/// | ``synchronize()``                    | `fsync`                 |                                         |
/// | ``synchronizeData()``                | `fdatasync`             |                                         |
/// | ``wait(for:milliseconds:)``          | `poll`                  | whether the event came in time          |
/// | ``status()``                         | `fstat`                 | the file's `stat`                       |
/// | ``close()``                          | `close`, never retried  |                                         |
///
/// A value, not an owner: copies name the same descriptor, and whoever opened it closes it once.
/// `package`: the CLI writes its output through it too.
package struct FileDescriptor: Sendable {
    /// The number the kernel gave.
    package let rawValue: Int32
    /// What errors call the file (its path, or a name such as `stdout`).
    package let path: String

    package init(_ rawValue: Int32, path: String) {
        self.rawValue = rawValue
        self.path = path
    }

    /// Opens `path` (`open`) with `flags` (and `mode`, for a file `O_CREAT` makes).
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemCallError) -> FileDescriptor {
        FileDescriptor(try SystemCall.check("open", path: path) { Glibc.open(path, flags, mode) }, path: path)
    }

    /// Reads up to `buffer.count` bytes at the file's offset (`read`); how many, 0 at the end.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        try SystemCall.check("read", path: path) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads up to `buffer.count` bytes at `offset` (`pread`, the file's offset unchanged); how
    /// many, 0 at or past the end.
    package func read(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        try SystemCall.check("pread", path: path) { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads from the file's offset to its end, at most `limit` bytes: a caller that must tell a
    /// file larger than its limit apart asks for one byte more.
    package func read(upTo limit: Int) throws(SystemCallError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: min(limit, 64 << 10))
        var filled = 0
        while filled < limit {
            if filled == bytes.count { bytes += [UInt8](repeating: 0, count: min(limit - filled, bytes.count)) }
            let count = try bytes.withUnsafeMutableBytes { all in
                Result { () throws(SystemCallError) in try read(into: UnsafeMutableRawBufferPointer(rebasing: all[filled...])) }
            }.get()
            if count == 0 { break }
            filled += count
        }
        bytes.removeLast(bytes.count - filled)
        return bytes
    }

    /// Writes what one `write` takes of `bytes` at the file's offset; how many (a pipe or a
    /// non-blocking output may take fewer, or fail with `EAGAIN`).
    package func write(_ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> Int {
        try SystemCall.check("write", path: path) { Glibc.write(rawValue, bytes.baseAddress, bytes.count) }
    }

    /// The array form of `write(_:)`: what one `write` takes of `bytes`.
    package func write(_ bytes: [UInt8]) throws(SystemCallError) -> Int {
        try bytes.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try write(raw) } }.get()
    }

    /// The array form of `writeAll(_:)`: every byte of `bytes`, or throws.
    package func writeAll(_ bytes: [UInt8]) throws(SystemCallError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try writeAll(raw) } }.get()
    }

    /// Writes all of `bytes` at the file's offset (`write`, again after a short write).
    /// - Throws: the failed call's error; `EIO` when a `write` takes nothing.
    package func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        var done = 0
        while done < bytes.count {
            let written = try write(UnsafeRawBufferPointer(rebasing: bytes[done...]))
            guard written > 0 else { throw SystemCallError(function: "write", path: path, errno: EIO) }
            done += written
        }
    }

    /// Writes all of `bytes` at `offset` (`pwrite`, again after a short write), the file's
    /// offset unchanged. `call` names the call in errors and ``FaultInjection``
    /// (``PartialFile/directWriteCall`` for the `O_DIRECT` descriptor).
    /// - Throws: the failed call's error; `EIO` when a `pwrite` takes nothing.
    package func write(toAbsoluteOffset offset: Int64, _ bytes: UnsafeRawBufferPointer, call: String = "pwrite") throws(SystemCallError) {
        var done = 0
        while done < bytes.count {
            let written = try SystemCall.check(call, path: path) {
                pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            guard written > 0 else { throw SystemCallError(function: call, path: path, errno: EIO) }
            done += written
        }
    }

    /// Makes the file's data and metadata durable (`fsync`); a directory's new entries too.
    package func synchronize() throws(SystemCallError) {
        try SystemCall.check("fsync", path: path) { fsync(rawValue) }
    }

    /// Makes the file's data durable, and the metadata reading it needs (`fdatasync`).
    package func synchronizeData() throws(SystemCallError) {
        try SystemCall.check("fdatasync", path: path) { fdatasync(rawValue) }
    }

    /// Waits at most `milliseconds` for `events` (`POLLIN`, `POLLOUT`; `poll`); whether they
    /// came (or an error or hang-up did, which the next read or write reports). An interrupted
    /// wait starts again, with the whole timeout.
    package func wait(for events: Int32, milliseconds: Int32) throws(SystemCallError) -> Bool {
        var request = pollfd(fd: rawValue, events: Int16(events), revents: 0)
        return try SystemCall.check("poll", path: path) { poll(&request, 1, milliseconds) } > 0
    }

    /// `fstat` of the open file.
    package func status() throws(SystemCallError) -> stat {
        var info = stat()
        try SystemCall.check("fstat", path: path) { fstat(rawValue, &info) }
        return info
    }

    /// Closes the descriptor (`close`). Not retried on `EINTR`: Linux has released the number
    /// by then, and a second `close` could close another thread's new file.
    package func close() {
        _ = Glibc.close(rawValue)
    }
}
