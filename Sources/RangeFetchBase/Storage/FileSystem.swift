#if canImport(Glibc)
import Glibc
#endif

/// Path-level file operations: renames, directory syncs, existence checks.
package enum FileSystem {
    package enum Kind { case missing, regular, directory, symbolicLink, other }

    /// What is at `path`: with `followingLinks` (the default) what a link there points to
    /// (`stat`; never ``Kind/symbolicLink``), else the entry itself (`lstat`).
    package static func kind(of path: String, followingLinks: Bool = true) -> Kind {
        var info = stat()
        guard (followingLinks ? stat(path, &info) : lstat(path, &info)) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFLNK: return .symbolicLink
        default: return .other
        }
    }

    /// `path` with symbolic links followed to the file they finally name, which may not exist
    /// yet (a dangling link names the file to create). Only the last component is followed;
    /// links in directories are left to the kernel. Gives up after 40 links (a loop), returning
    /// the last path reached, where opening fails with a clear error.
    /// - Throws: when a link is one ``LinkFollowRule`` forbids following (another user's link in
    ///   a sticky world-writable directory), naming it and its owner, then saying `refusal` and
    ///   with `remedy`.
    package static func followingLinks(_ path: String, refusal: String = "so nothing was written",
                               remedy: DownloadError.Remedy? = .removeStrayFile) throws(DownloadError) -> String {
        var current = path
        for _ in 0..<40 {
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return current }
            let directory = directoryName(of: current)
            var holder = stat()
            if stat(directory, &holder) == 0,
               !LinkFollowRule.mayFollow(linkOwner: info.st_uid, directoryMode: holder.st_mode,
                                         directoryOwner: holder.st_uid, caller: geteuid()) {
                throw DownloadError(.fileSystem(errno: EACCES), "\(current) is a symbolic link owned by uid \(info.st_uid) in \(directory), which anyone can write to; it is not followed, \(refusal)", remedy: remedy)
            }
            var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlink(current, &target, target.count - 1)
            guard length > 0 else { return current }
            let link = String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = link.hasPrefix("/") ? link : directory + "/" + link
        }
        return current
    }

    /// The process's umask, read without changing it (`Umask:` in `/proc/self/status`, Linux
    /// 4.7 and later), else the usual 022.
    package static var umask: mode_t {
        guard let status = smallFileText("/proc/self/status"),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
              let value = mode_t(line.dropFirst(6).trimmingCharacters(), radix: 8) else { return 0o022 }
        return value
    }

    /// The bytes of each of `ranges` in the regular file at `path` (fewer where the file ends
    /// sooner), read through one descriptor opened without following a link.
    package static func bytes(of ranges: [ByteRange], inFileAt path: String) throws(SystemCallError) -> [[UInt8]] {
        let descriptor = try FileDescriptor.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY)
        defer { descriptor.close() }
        return try ranges.map { (range) throws(SystemCallError) -> [UInt8] in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Int(range.count))
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(max(range.count, 1)), alignment: 1)
            defer { buffer.deallocate() }
            try descriptor.readBack(range, into: buffer) { _, chunk in bytes += chunk }
            return bytes
        }
    }

    /// The text of a file of at most 64 KiB (a `/proc` file), or `nil`.
    package static func smallFileText(_ path: String) -> String? {
        guard let descriptor = try? FileDescriptor.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { descriptor.close() }
        return (try? descriptor.read(upTo: 64 << 10)).map { String(decoding: $0, as: UTF8.self) }
    }

    package static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// Renames `source` to `destination` atomically and makes the rename durable by syncing the
    /// directory that holds them.
    package static func durableRename(_ source: String, to destination: String) throws(SystemCallError) {
        try SystemCall.check("rename", path: destination) { rename(source, destination) }
        try synchronizeDirectory(containing: destination)
    }

    /// `fsync` of the directory holding `path`, so a new or renamed entry survives a crash.
    package static func synchronizeDirectory(containing path: String) throws(SystemCallError) {
        let directory = directoryName(of: path)
        let descriptor = try SystemCall.check("open", path: directory) {
            open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        defer { close(descriptor) }
        try SystemCall.check("fsync", path: directory) { fsync(descriptor) }
    }

    package static func remove(_ path: String) {
        unlink(path)
    }

    /// The directory part of `path` (`.` for a bare name). Slashes are found as the kernel finds
    /// them, byte by byte (a `/` followed by a combining mark is one `Character`, and still a
    /// separator), and without the cost of `Character`s: a list's every file asks.
    package static func directoryName(of path: String) -> String {
        guard let slash = lastSlash(path) else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path.utf8[..<slash])!
    }

    /// The last component of `path` (`path` itself when it has no slash).
    package static func baseName(of path: String) -> String {
        guard let slash = lastSlash(path) else { return path }
        return String(path.utf8[path.utf8.index(after: slash)...])!
    }

    private static func lastSlash(_ path: String) -> String.Index? {
        path.utf8.lastIndex(of: UInt8(ascii: "/"))
    }

    /// Checks that `directory` exists, is a directory and is writable by this process.
    package static func checkWritableDirectory(_ directory: String) throws(DownloadError) {
        switch kind(of: directory) {
        case .missing:
            var ancestor = directoryName(of: directory)
            while kind(of: ancestor) == .missing && ancestor != directoryName(of: ancestor) { ancestor = directoryName(of: ancestor) }
            if kind(of: ancestor) != .directory {
                throw DownloadError(.fileSystem(errno: ENOTDIR), "cannot create directory \(directory): \(ancestor) is a file, not a directory")
            }
            throw DownloadError(.fileSystem(errno: ENOENT), "output directory \(directory) does not exist and could not be created\(access(ancestor, W_OK) == 0 ? "" : " (\(ancestor) is not writable)")")
        case .directory:
            guard access(directory, W_OK) == 0 else {
                throw DownloadError(.fileSystem(errno: EACCES), "output directory \(directory) is not writable")
            }
        case .regular, .symbolicLink, .other:
            throw DownloadError(.fileSystem(errno: ENOTDIR), "\(directory) is not a directory")
        }
    }

    /// `mkdir -p`: creates `directory` and any missing parents (mode 0755 less the umask),
    /// walking it with ``DirectoryWalk``, so nothing is made through a link another user put
    /// on the way in a directory anyone can write to.
    /// - Throws: for such a link only; other failures surface later, when the directory is checked.
    package static func createDirectories(_ directory: String) throws(DownloadError) {
        do {
            close(try DirectoryWalk.open(directory, creating: true))
        } catch where error.explanation != nil {
            throw error.downloadError
        } catch {
            return
        }
    }

    /// Free bytes available to this process on the file system holding `path`, if known.
    package static func availableBytes(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
