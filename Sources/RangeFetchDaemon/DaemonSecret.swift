#if canImport(Glibc)
import Glibc
#endif

/// The daemon's RPC secret when none is given: made once, kept in `STATE/rpc-secret` (mode
/// 0600, in a directory of mode 0700), read on later starts. A file there that is a link,
/// not a regular file, not the user's own or readable by others is refused.
public enum DaemonSecret {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `$XDG_STATE_HOME/rangefetch`, else `~/.local/state/rangefetch`.
    public static func defaultDirectory() -> String {
        if let state = getenv("XDG_STATE_HOME").map({ String(cString: $0) }), state.hasPrefix("/") { return state + "/rangefetch" }
        let home = getenv("HOME").map { String(cString: $0) } ?? "."
        return home + "/.local/state/rangefetch"
    }

    /// The secret: `given`, else the one kept in `directory` (made there the first time). The
    /// directory is created (0700) either way: the queue lives there too.
    public static func loadOrCreate(in directory: String, given: String? = nil) throws(Failure) -> String {
        try makeDirectories(directory)
        if let given { return given }
        let path = directory + "/rpc-secret"
        if let secret = try existing(in: directory) { return secret }
        let secret = Aria2Service.randomHex(32)
        let created = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard created >= 0 else { throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(created) }
        let line = Array((secret + "\n").utf8)
        guard write(created, line, line.count) == line.count, fsync(created) == 0 else {
            throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return secret
    }

    /// The secret kept in `directory`, or `nil` when there is none (nothing is made): what the
    /// CLI verbs use to call the daemon.
    public static func existing(in directory: String) throws(Failure) -> String? {
        let path = directory + "/rpc-secret"
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            guard errno == ENOENT else { throw Failure(description: "\(path): \(String(cString: strerror(errno)))") }
            return nil
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
              info.st_mode & 0o077 == 0 else {
            throw Failure(description: "\(path) is not a file of yours that only you can read; remove it or pass --rpc-secret")
        }
        var bytes = [UInt8](repeating: 0, count: 256)
        let count = read(descriptor, &bytes, bytes.count)
        let secret = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).filter { !$0.isWhitespace }
        guard !secret.isEmpty else { throw Failure(description: "\(path) is empty; remove it or pass --rpc-secret") }
        return secret
    }

    private static func makeDirectories(_ directory: String) throws(Failure) {
        var path = ""
        for part in directory.split(separator: "/") {
            path += (directory.hasPrefix("/") || !path.isEmpty ? "/" : "") + part
            if mkdir(path, 0o700) != 0, errno != EEXIST {
                throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
    }
}
