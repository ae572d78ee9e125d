#if canImport(Glibc)
import Glibc
#endif

/// Path-level file operations: renames, directory syncs, existence checks.
enum FileSystem {
    enum Kind { case missing, regular, directory, other }

    static func kind(of path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// Renames `source` to `destination` atomically and makes the rename durable by syncing the
    /// directory that holds them.
    static func durableRename(_ source: String, to destination: String) throws(SystemCallError) {
        try SystemCall.check("rename", path: destination) { rename(source, destination) }
        try synchronizeDirectory(containing: destination)
    }

    /// `fsync` of the directory holding `path`, so a new or renamed entry survives a crash.
    static func synchronizeDirectory(containing path: String) throws(SystemCallError) {
        let directory = directoryName(of: path)
        let descriptor = try SystemCall.check("open", path: directory) {
            open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        defer { close(descriptor) }
        try SystemCall.check("fsync", path: directory) { fsync(descriptor) }
    }

    static func remove(_ path: String) {
        unlink(path)
    }

    /// The directory part of `path` (`.` for a bare name).
    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Checks that `directory` exists, is a directory and is writable by this process.
    static func checkWritableDirectory(_ directory: String) throws(DownloadError) {
        switch kind(of: directory) {
        case .missing:
            throw DownloadError(.fileSystem(errno: ENOENT), "output directory \(directory) does not exist")
        case .directory:
            guard access(directory, W_OK) == 0 else {
                throw DownloadError(.fileSystem(errno: EACCES), "output directory \(directory) is not writable")
            }
        case .regular, .other:
            throw DownloadError(.fileSystem(errno: ENOTDIR), "\(directory) is not a directory")
        }
    }

    /// `mkdir -p`: creates `directory` and any missing parents (mode 0755); failures surface
    /// later, when the directory is checked.
    static func createDirectories(_ directory: String) {
        guard kind(of: directory) == .missing else { return }
        let parent = directoryName(of: directory)
        if parent != directory { createDirectories(parent) }
        mkdir(directory, 0o755)
    }

    /// Free bytes available to this process on the file system holding `path`, if known.
    static func availableBytes(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
