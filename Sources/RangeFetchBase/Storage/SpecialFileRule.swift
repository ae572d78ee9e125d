#if canImport(Glibc)
import Glibc
#endif

/// Whether a FIFO, device or socket at a path the user gave as the output may receive the
/// download: the kernel's `fs.protected_fifos` rule (level 1), applied by us to every file that
/// is not a regular one, whatever the sysctl says.
///
/// curl and wget open their output with `O_CREAT`, so with the sysctl set the kernel refuses
/// them another user's FIFO in `/tmp` ("Permission denied"). We open an existing FIFO or device
/// without `O_CREAT` (it stays what it is), which the kernel never checks. In a sticky
/// directory anyone can write to, such a file is written only when the writer or the
/// directory's owner owns it: another user's FIFO there is their way to read the download,
/// bytes fetched with credentials included. Elsewhere whoever could make it could as well read
/// the regular file we would write (`/dev/null` is root's, in root's `/dev`).
///
/// | owner              | directory                      | written |
/// |--------------------|--------------------------------|---------|
/// | the caller         | any                            | yes     |
/// | the directory's    | any                            | yes     |
/// | another user       | sticky and world-writable      | no      |
/// | another user       | anything else                  | yes     |
package enum SpecialFileRule {
    package static func mayWrite(owner: uid_t, directoryMode: mode_t, directoryOwner: uid_t, caller: uid_t) -> Bool {
        let shared = directoryMode & S_ISVTX != 0 && directoryMode & S_IWOTH != 0
        return !shared || owner == caller || owner == directoryOwner
    }

    /// What the file with `mode` is, in words for messages.
    package static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a directory"
        default: "not a regular file"
        }
    }
}
