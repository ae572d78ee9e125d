#if canImport(Glibc)
import Glibc
#endif

/// Whether a symbolic link at a path the user gave as the output file may be followed: the
/// kernel's `fs.protected_symlinks` rule, applied by us because we resolve that path ourselves
/// (``FileSystem/followingLinks(_:)``), so the kernel's check never sees it.
///
/// In a sticky directory anyone can write to (`/tmp`, 01777), a link is followed only when the
/// follower or the directory's owner owns it: otherwise another user could have put it there
/// to send our bytes to a file of their choosing. Elsewhere, whoever could plant a link could
/// as well write the file, so links are followed.
package enum LinkFollowRule {
    package static func mayFollow(linkOwner: uid_t, directoryMode: mode_t, directoryOwner: uid_t, caller: uid_t) -> Bool {
        let shared = directoryMode & S_ISVTX != 0 && directoryMode & S_IWOTH != 0
        return !shared || linkOwner == caller || linkOwner == directoryOwner
    }
}
