import Foundation

/// A small tmpfs mounted on a fresh temporary directory for one test (a disk that is nearly
/// full, a directory even root cannot write), unmounted when it goes away. Needs root and a
/// system that lets this process mount; ``available`` tells, probed once, for `.enabled(if:)`.
final class Tmpfs {
    private let directory: TemporaryDirectory
    var path: String { directory.path }

    /// Mounts a tmpfs with `options` (`mount -o`, e.g. "ro,size=1m"); throws with mount's
    /// message when it cannot.
    init(options: String) throws {
        directory = try TemporaryDirectory("rf-tmpfs")
        let mounted = try TestProcess.run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", directory.path])
        guard mounted.status == 0 else { throw TestFailure("mount -t tmpfs -o \(options) failed: \(mounted.stderr)") }
    }

    deinit { _ = try? TestProcess.run("/bin/umount", [directory.path]) }

    /// Whether a tmpfs can be mounted here: root, and mounting not forbidden (a container).
    static let available: Bool = geteuid() == 0 && (try? Tmpfs(options: "size=64k")) != nil
}
