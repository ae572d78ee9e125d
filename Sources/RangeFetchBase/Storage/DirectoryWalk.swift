#if canImport(Glibc)
import Glibc
#endif
import CFileShims

/// Opens a directory by walking its path one component at a time (`openat` with `O_PATH |
/// O_NOFOLLOW`), so that every symbolic link on the way is seen rather than followed by the
/// kernel unasked.
///
/// A directory others can write to (`/tmp`, 01777) may hold a link another user put under the
/// name of a directory we are about to use or create (`-d /tmp/shared/out`, a list's `dir=`);
/// followed, our files would be created wherever it points. A link on the way is followed only
/// when ``LinkFollowRule`` allows it (ours, the directory owner's, or outside a sticky
/// world-writable directory), by reading it and walking on from what it names, each link there
/// judged the same way (at most ``maximumLinks``, like the kernel's 40).
///
/// | component                                     | walk                                   |
/// |-----------------------------------------------|----------------------------------------|
/// | a directory                                   | steps into it                          |
/// | missing, `creating`                           | `mkdirat` (0755 less the umask), steps |
/// | missing                                       | `ENOENT`                               |
/// | a link ``LinkFollowRule`` allows               | walks what it names                    |
/// | another user's link in a sticky shared dir    | `EACCES`, saying whose link it is      |
/// | anything else (a file)                        | `ENOTDIR`                              |
package enum DirectoryWalk {
    /// The most links followed in one walk, as the kernel's `ELOOP` limit.
    package static let maximumLinks = 40

    /// A descriptor of the directory at `path` (`O_RDONLY | O_DIRECTORY`, so it can be
    /// `fsync`ed), which the caller closes.
    /// - Parameter creating: make missing directories on the way (`mkdir -p`).
    /// - Throws: a ``SystemCallError`` naming the component that failed; for a link not followed,
    ///   one whose ``SystemCallError/explanation`` says whose link it is and where.
    package static func open(_ path: String, creating: Bool = false) throws(SystemCallError) -> Int32 {
        var pending = components(path).reversed() as [String]
        // The directory reached so far, as messages name it.
        var shown = path.hasPrefix("/") ? "/" : "."
        var current = try SystemCall.check("open", path: path.hasPrefix("/") ? "/" : ".") {
            Glibc.open(path.hasPrefix("/") ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        var links = 0, raced = 0
        while let name = pending.popLast() {
            let here = shown == "." ? name : shown == "/" ? "/" + name : shown + "/" + name
            let failure: Int32
            do {
                let next = try SystemCall.check("open", path: here) { cfs_open_directory_step(current, name) }
                close(current)
                current = next
                shown = here
                continue
            } catch {
                failure = error.errno
            }
            if failure == ENOENT && creating {
                if mkdirat(current, name, 0o755) != 0 {
                    // Made by another meanwhile: looked at again, a bounded number of times (a
                    // name another process keeps making and removing is not chased forever).
                    let error = SystemCallError(function: "mkdir", path: here, errno: errno)
                    raced += 1
                    guard error.errno == EEXIST, raced <= maximumLinks else {
                        close(current)
                        throw error
                    }
                }
                pending.append(name)
                continue
            }
            var info = stat()
            guard failure == ELOOP || failure == ENOTDIR,
                  fstatat(current, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFLNK else {
                close(current)
                throw SystemCallError(function: "open", path: here, errno: failure)
            }
            var holder = stat()
            if fstat(current, &holder) != 0
                || !LinkFollowRule.mayFollow(linkOwner: info.st_uid, directoryMode: holder.st_mode,
                                             directoryOwner: holder.st_uid, caller: geteuid()) {
                close(current)
                var error = SystemCallError(function: "open", path: here, errno: EACCES)
                error.explanation = "\(here) is a symbolic link owned by uid \(info.st_uid) in \(shown), which anyone can write to; it is not followed, so nothing was written"
                throw error
            }
            links += 1
            guard links <= maximumLinks, let target = readLink(current, name) else {
                close(current)
                throw SystemCallError(function: "open", path: here, errno: links > maximumLinks ? ELOOP : errno)
            }
            if target.hasPrefix("/") {
                close(current)
                current = try SystemCall.check("open", path: "/") { Glibc.open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
                shown = "/"
            }
            pending.append(contentsOf: components(target).reversed())
        }
        // The walk's steps are O_PATH: the directory itself is opened once more, for reading.
        defer { close(current) }
        return try SystemCall.check("open", path: path) { openat(current, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    }

    /// The names along `path`, without empty ones and `.` (`..` is kept: the kernel steps up).
    package static func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init).filter { $0 != "." }
    }

    /// What the link `name` in `directory` holds (`readlinkat`), `nil` with errno set on failure.
    private static func readLink(_ directory: Int32, _ name: String) -> String? {
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlinkat(directory, name, &target, target.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
