#if canImport(Glibc)
import Glibc
#endif

/// The journal file on disk, replaced atomically: write `PATH.tmp`, `fsync` it, `rename` it over
/// `PATH`, `fsync` the directory. A crash at any point leaves the old record or the new one.
struct JournalStore: Sendable {
    let path: String
    private var temporaryPath: String { path + ".tmp" }

    enum Loaded {
        case missing
        case unreadable(String)
        case record(JournalRecord)
    }

    func load() -> Loaded {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return errno == ENOENT ? .missing : .unreadable("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
            if bytes.count > 64 << 20 { return .unreadable("\(path) is too large to be a journal") }
        }
        do {
            return .record(try JournalCodec.decode(bytes))
        } catch {
            return .unreadable("\(path): \(error)")
        }
    }

    /// Durably replaces the journal with `record`.
    func write(_ record: JournalRecord) throws(SystemCallError) {
        let bytes = JournalCodec.encode(record)
        let temporary = temporaryPath
        let descriptor = try SystemCall.check("open", path: temporary) {
            open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }
        defer { close(descriptor) }
        var done = 0
        while done < bytes.count {
            let written = try SystemCall.check("write", path: temporary) {
                bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + done, $0.count - done) }
            }
            done += written
        }
        try SystemCall.check("fsync", path: temporary) { fsync(descriptor) }
        try FileSystem.durableRename(temporary, to: path)
    }

    func remove() {
        unlink(path)
        unlink(temporaryPath)
    }
}
