#if canImport(Glibc)
import Glibc
#endif

/// One daemon per state directory: an exclusive `flock` on `STATE/daemon.lock`, held while the
/// daemon lives (the kernel lets it go when the process ends, `kill -9` included), with the
/// holder's pid written in it so a second daemon can name it. Two daemons on one queue would
/// each run the other's downloads into the same files.
final class StateDirectoryLock: Sendable {
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(directory: String) throws(Failure) {
        let path = directory + "/daemon.lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            var bytes = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &bytes, bytes.count, 0)
            close(descriptor)
            guard reason == EWOULDBLOCK else { throw Failure(description: "cannot lock \(path): \(String(cString: strerror(reason)))") }
            let holder = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).filter(\.isNumber)
            throw Failure(description: "another rangefetch daemon\(holder.isEmpty ? "" : " (pid \(holder))") uses the state "
                + "directory \(directory); stop it, or give this one its own --state-dir")
        }
        let line = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, line, line.count, 0)
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }
}
