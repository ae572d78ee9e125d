#if canImport(Glibc)
import Glibc
#endif

/// Whether a file that already exists under one of our names may be taken as this process's
/// own: a partial download to resume, a journal to read.
///
/// In a directory that others can write to (`/tmp`, `/var/tmp`, a group's directory) anyone can
/// put a file under the name we are about to use. Only a regular file that this user owns and
/// that has no other name is ours alone: a link would send our writes to another file, a file
/// of another user stays theirs to rewrite after we checked it, and a second hard link is
/// another name for the same bytes, possibly somewhere we would never write to.
package enum FileTrust: Equatable, Sendable {
    /// A regular file of the caller's with one link.
    case own
    case symbolicLink
    /// A directory, FIFO, socket or device.
    case notRegular
    case ownedBy(uid: UInt32)
    case linked(count: Int)

    /// The verdict on a file with these `stat` fields, for a process running as `caller`
    /// (its effective uid).
    package init(mode: mode_t, owner: uid_t, links: Int, caller: uid_t) {
        switch mode & S_IFMT {
        case S_IFLNK: self = .symbolicLink
        case S_IFREG:
            if owner != caller {
                self = .ownedBy(uid: owner)
            } else if links != 1 {
                self = .linked(count: links)
            } else {
                self = .own
            }
        default: self = .notRegular
        }
    }

    /// The verdict on the file `info` describes (from `fstat` or `fstatat` without following),
    /// for this process.
    package init(_ info: stat) {
        self.init(mode: info.st_mode, owner: info.st_uid, links: Int(info.st_nlink), caller: geteuid())
    }

    /// The verdict on the entry at `path` as it is now (`lstat`: a link is judged, not
    /// followed), `nil` when there is none.
    package init?(entryAt path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// What is wrong with the file at `path`, in words; `nil` for ``own``.
    package func problem(at path: String) -> String? {
        switch self {
        case .own: nil
        case .symbolicLink: "\(path) is a symbolic link"
        case .notRegular: "\(path) is not a regular file"
        case .ownedBy(let uid): "\(path) is owned by uid \(uid), not by this user (uid \(geteuid()))"
        case .linked(let count): "\(path) has \(count) links (another name for the same file)"
        }
    }

    /// The errno a refusal is reported with.
    package var errno: Int32 {
        switch self {
        case .own: 0
        case .symbolicLink: ELOOP
        case .notRegular: EINVAL
        case .ownedBy: EPERM
        case .linked: EMLINK
        }
    }
}
