#if canImport(Glibc)
import Glibc
#endif

/// A directory held open, in which files are created, opened, renamed and removed by name
/// relative to its descriptor (`openat`, `renameat`, `unlinkat`), never following a symbolic
/// link at the name.
///
/// Our names (`NAME.part`, its journal) sit beside the final file, often in a directory others
/// can write to (`/tmp`, a group's directory). Whoever can create entries there can put a link
/// under one of those names before we do; opening by path with `O_CREAT` would then create,
/// truncate or overwrite whatever the link points to. Here a new file is created with
/// `O_CREAT | O_EXCL | O_NOFOLLOW`, which fails on any entry at the name, link or not, and an
/// existing one is opened with `O_NOFOLLOW` and taken only when ``FileTrust`` says it is ours.
package final class DirectoryHandle: Sendable {
    package let path: String
    package let descriptor: Int32

    /// Opens `path` (`O_RDONLY | O_DIRECTORY`; read access lets it be `fsync`ed), walking it
    /// component by component (``DirectoryWalk``): never through another user's link in a
    /// directory anyone can write to.
    package init(_ path: String) throws(SystemCallError) {
        self.path = path
        descriptor = try DirectoryWalk.open(path)
    }

    /// The handle of the directory holding `filePath`, and the file's name in it.
    package static func holding(_ filePath: String) throws(SystemCallError) -> (DirectoryHandle, String) {
        (try DirectoryHandle(FileSystem.directoryName(of: filePath)), FileSystem.baseName(of: filePath))
    }

    deinit { close(descriptor) }

    /// The path `name` has in this directory, for messages.
    package func pathOf(_ name: String) -> String {
        path.hasSuffix("/") ? path + name : path + "/" + name
    }

    /// Creates `name`, which must not exist in any form (`openat` with `O_CREAT | O_EXCL |
    /// O_NOFOLLOW`); `EEXIST` when something, a dangling link included, is there.
    package func createNew(_ name: String, flags: Int32, mode: mode_t) throws(SystemCallError) -> Int32 {
        let all = flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        return try SystemCall.check("open", path: pathOf(name)) { openat(descriptor, name, all, mode) }
    }

    /// What opening an existing entry found.
    package enum Existing {
        /// Nothing at the name.
        case missing
        /// A file of ours alone (``FileTrust/own``), open with the flags asked for.
        case own(descriptor: Int32)
        /// Something else; nothing was opened.
        case refused(FileTrust)
    }

    /// Opens the existing `name` with `flags` when it is this user's own regular file with one
    /// link (checked with `fstat` on the descriptor opened, `O_NOFOLLOW`, so what is checked is
    /// what is used). A FIFO does not block the open (`O_NONBLOCK`, cleared again for a file).
    package func openExisting(_ name: String, flags: Int32) throws(SystemCallError) -> Existing {
        let all = flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
        let opened: Int32
        do {
            opened = try SystemCall.check("open", path: pathOf(name)) { openat(descriptor, name, all) }
        } catch where error.errno == ENOENT {
            return .missing
        } catch where error.errno == ELOOP {
            return .refused(.symbolicLink)
        } catch where error.errno == EACCES || error.errno == EPERM {
            // Not ours to open: say whose it is, when that is the reason.
            if let trust = entryTrust(name), trust != .own { return .refused(trust) }
            throw error
        }
        var info = stat()
        do {
            try SystemCall.check("fstat", path: pathOf(name)) { fstat(opened, &info) }
        } catch {
            close(opened)
            throw error
        }
        let trust = FileTrust(info)
        guard trust == .own else {
            close(opened)
            return .refused(trust)
        }
        _ = fcntl(opened, F_SETFL, fcntl(opened, F_GETFL) & ~O_NONBLOCK)
        return .own(descriptor: opened)
    }

    /// The verdict on `name` as it is now (`fstatat` without following), `nil` when missing.
    package func entryTrust(_ name: String) -> FileTrust? {
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileTrust(info)
    }

    /// Whether `name` is, right now, the file open as `file` (same device and inode).
    package func names(_ name: String, file: Int32) -> Bool {
        var entry = stat()
        var open = stat()
        guard fstatat(descriptor, name, &entry, AT_SYMLINK_NOFOLLOW) == 0, fstat(file, &open) == 0 else { return false }
        return entry.st_dev == open.st_dev && entry.st_ino == open.st_ino
    }

    /// Removes the entry `name` (a link is removed itself, never what it points to).
    package func remove(_ name: String) throws(SystemCallError) {
        try SystemCall.check("unlink", path: pathOf(name)) { unlinkat(descriptor, name, 0) }
    }

    /// Renames `source` to `destination` in this directory (`renameat`: an entry at
    /// `destination`, a link included, is replaced, never followed) and makes it durable.
    package func durableRename(_ source: String, to destination: String) throws(SystemCallError) {
        try SystemCall.check("rename", path: pathOf(destination)) { renameat(descriptor, source, descriptor, destination) }
        try SystemCall.check("fsync", path: path) { fsync(descriptor) }
    }
}
