#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// Reads a list (``Manifest``'s format) from a file or standard input as a stream: a bounded
/// buffer, line by line, each entry handed out as soon as it is complete, so the first download
/// can start while the rest of a list of millions is still unread, and memory does not grow
/// with the list.
///
/// A malformed line is a usage error naming the file and line, thrown when the reader reaches it.
/// Reads with plain `read(2)`, so a pipe or FIFO works (`-` is standard input).
package final class ManifestReader {
    /// Bytes read from the file at a time.
    static let chunkBytes = 64 * 1024
    /// The longest line accepted, in bytes: a longer one is an error rather than unbounded memory.
    public static let maximumLineBytes = 1 << 20

    /// The path given (`-` for standard input).
    public let path: String
    private let descriptor: Int32
    private var parser: ManifestParser
    /// Bytes read but not yet split into lines, `start..<filled` (at most one partial line plus
    /// one chunk).
    private var buffer: [UInt8] = []
    /// Where the unsplit bytes start in `buffer`.
    private var start = 0
    /// Where they end.
    private var filled = 0
    private var atEnd = false
    private var finished = false
    /// Asked while waiting for a pipe's next bytes: `true` ends the wait by throwing
    /// ``DownloadError/cancelled()``, so a stopped batch does not wait for a writer that is idle.
    var isCancelled: @Sendable () -> Bool = { false }
    /// How long one wait for a pipe's bytes lasts before ``isCancelled`` is asked again.
    static let cancellationPollMilliseconds: Int32 = 100

    /// A copy of what was read from a list that cannot be read again (a pipe, standard input), so
    /// ``DistinctPaths`` can still read its earlier lines; `nil` once a write to it fails. It has
    /// no name (a list may carry credentials: `header=`, passwords in URLs): it is read again
    /// through `/proc/self/fd`, and vanishes with the process, however it ends.
    private var spill: (file: PartialFile, path: String)?

    /// Opens `path` (`-`: standard input); a usage error naming the path when it cannot be opened.
    /// A list that cannot be read again is copied, as it is read, to a file with no name in
    /// `$TMPDIR` (else `/tmp`); without room there it is not copied.
    public convenience init(path: String) throws(DownloadError) {
        try self.init(path: path, source: path == "-" ? "stdin" : path, keepsCopy: true)
    }

    /// Opens `path`, naming it `source` in messages; `keepsCopy`: copy a pipe's bytes (see above).
    init(path: String, source: String, keepsCopy: Bool) throws(DownloadError) {
        self.path = path
        descriptor = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        parser = ManifestParser(source: source)
        guard descriptor >= 0 else { throw Self.unreadable(path) }
        if keepsCopy && !isRegularFile { spill = Self.makeSpill() }
    }

    deinit {
        if descriptor > STDIN_FILENO { close(descriptor) }
        dropSpill()
    }

    /// The list's name in messages (`stdin` for `-`).
    public var source: String { parser.source }

    /// Whether the list is a regular file, so it can be read again from its start (a pipe cannot):
    /// asked once, as ``rereadable`` is asked for every line.
    private lazy var isRegularFile: Bool = {
        var status = stat()
        return path != "-" && fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }()

    /// A file holding every line read so far, from the start (the list itself, or the copy of a
    /// pipe's), and the list's name for messages; `nil` when there is none.
    var rereadable: (path: String, source: String)? {
        isRegularFile ? (path, source) : spill.map { ($0.path, source) }
    }

    /// A file with no name for the copy (``PartialFile/init(anonymousIn:)``: `O_TMPFILE`, else
    /// one created and removed at once), and the path that opens it again, with an offset of its
    /// own (`/proc/self/fd/N`).
    private static func makeSpill() -> (file: PartialFile, path: String)? {
        guard let file = try? PartialFile(anonymousIn: Environment.value("TMPDIR") ?? "/tmp") else { return nil }
        return (file, "/proc/self/fd/\(file.descriptor)")
    }

    /// Appends `count` bytes at `bytes` to the copy; on a failed write the copy is dropped.
    private func copyToSpill(_ bytes: UnsafePointer<UInt8>, count: Int) {
        guard let spill else { return }
        do {
            try spill.file.handle.writeAll(UnsafeRawBufferPointer(start: bytes, count: count))
        } catch {
            dropSpill()
        }
    }

    private func dropSpill() {
        guard let spill else { return }
        spill.file.close()
        self.spill = nil
    }

    /// The next entry, `nil` at the end of the list; a usage error naming the file and line for a
    /// malformed line, or naming the path when reading fails.
    public func next() throws(DownloadError) -> BatchEntry? {
        while !finished {
            guard let line = try nextLine() else {
                finished = true
                return try parser.finish()?.resolvingMetalink()
            }
            if let entry = try parser.consume(line) { return try entry.resolvingMetalink() }
        }
        return nil
    }

    /// The next line without its line break (a trailing `\r` dropped), `nil` at the end.
    private func nextLine() throws(DownloadError) -> Substring? {
        while true {
            let pending = filled - start
            // memchr rather than a generic search: a list of millions passes through here.
            let newline = buffer.withUnsafeBufferPointer { bytes -> Int? in
                guard pending > 0, let base = bytes.baseAddress,
                      let found = memchr(base + start, Int32(UInt8(ascii: "\n")), pending) else { return nil }
                return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            }
            if let newline {
                guard newline - start <= Self.maximumLineBytes else { throw tooLong() }
                defer { start = newline + 1 }
                return line(upTo: newline)
            }
            if atEnd {
                guard pending > 0 else { return nil }
                defer { start = filled }
                return line(upTo: filled)
            }
            guard pending <= Self.maximumLineBytes else { throw tooLong() }
            try fill()
        }
    }

    /// The bytes from `start` to `end` as text, without a `\r` before `end`.
    private func line(upTo end: Int) -> Substring {
        buffer.withUnsafeBufferPointer { bytes in
            var end = end
            if end > start && bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)[...]
        }
    }

    /// Drops the lines already split off and appends the next chunk of the file.
    private func fill() throws(DownloadError) {
        let kept = filled - start
        let wanted = kept + Self.chunkBytes
        if buffer.count < wanted { buffer += [UInt8](repeating: 0, count: wanted - buffer.count) }
        let start = self.start
        try waitUntilReadable()
        let input = FileDescriptor(descriptor, path: path)
        let read = buffer.withUnsafeMutableBytes { (bytes) -> Result<Int, SystemCallError> in
            guard let base = bytes.baseAddress else { return .success(0) }
            memmove(base, base + start, kept)
            return Result { () throws(SystemCallError) in
                try input.read(into: UnsafeMutableRawBufferPointer(start: base + kept, count: Self.chunkBytes))
            }
        }
        self.start = 0
        filled = kept
        let received: Int
        switch read {
        case .success(let count): received = count
        case .failure(let error): throw Self.unreadable(path, errno: error.errno)
        }
        if received > 0 {
            buffer.withUnsafeBufferPointer { bytes in
                if let base = bytes.baseAddress { copyToSpill(base + kept, count: received) }
            }
        }
        filled += received
        if received == 0 { atEnd = true }
    }

    /// Returns once a read would not block (at once for a file), or throws once cancelled.
    private func waitUntilReadable() throws(DownloadError) {
        let input = FileDescriptor(descriptor, path: path)
        while true {
            if isCancelled() { throw DownloadError.cancelled() }
            // An error shows in the read.
            guard (try? input.wait(for: POLLIN, milliseconds: Self.cancellationPollMilliseconds)) == false else { return }
        }
    }

    /// The line being read is longer than ``maximumLineBytes``.
    private func tooLong() -> DownloadError {
        DownloadError(.invalidOption, "\(source):\(parser.lineNumber + 1): a line longer than \(Self.maximumLineBytes) bytes")
    }

    private static func unreadable(_ path: String, errno code: Int32 = errno) -> DownloadError {
        DownloadError(.invalidOption, "cannot read the list \(path == "-" ? "on standard input" : path): \(String(cString: strerror(code)))")
    }
}
