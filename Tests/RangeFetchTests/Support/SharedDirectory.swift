import Foundation
import Testing

/// A directory under /var/tmp (on disk), by default world-writable and sticky (01777, like
/// /tmp), and a way to put files in it as another user (`nobody`), as someone sharing the
/// machine would.
final class SharedDirectory {
    let path: String

    init(mode: mode_t = 0o1777) throws {
        var bytes = Array("/var/tmp/rf-shared-XXXXXX".utf8CString)
        guard mkdtemp(&bytes) != nil else { throw TestFailure("mkdtemp in /var/tmp failed") }
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard chmod(path, mode) == 0 else { throw TestFailure("chmod \(path) failed") }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    /// Runs the shell `command` in this directory as `nobody:nogroup` with no supplementary
    /// groups (`setpriv`); fails the test when it fails.
    func asNobody(_ command: String) throws {
        let result = try TestProcess.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                                               "/bin/sh", "-c", "cd '\(path)' && \(command)"])
        guard result.status == 0 else { throw TestFailure("as nobody: \(command): \(result.stderr)") }
    }

    /// Whether files can be planted as another user: the suite runs as root, with setpriv.
    static var canPlant: Bool {
        geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    }

    /// `lstat` of `path`: the entry itself, `nil` when there is none.
    static func entry(_ path: String) -> stat? {
        var info = stat()
        return lstat(path, &info) == 0 ? info : nil
    }
}
