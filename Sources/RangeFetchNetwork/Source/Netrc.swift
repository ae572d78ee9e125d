import RangeFetchBase
import CFileShims
#if canImport(Glibc)
import Glibc
#endif

/// The logins of a netrc file (`machine HOST login NAME password SECRET`, and one `default`),
/// read once per download rather than by libcurl on every request.
///
/// Read here because libcurl 7.88 applies the `default` entry to any host a redirect reaches
/// (and leaks the first host's password to a redirect target in some cases, CVE-2024-11053).
/// Who may receive which login is ``CredentialScope``'s decision.
package struct Netrc: Sendable, Equatable {
    package struct Login: Sendable, Equatable {
        package var login: String
        package var password: String

        package init(login: String, password: String) {
            self.login = login
            self.password = password
        }
    }

    /// `machine` entries in file order (the first for a host wins, as in curl and ftp).
    package var machines: [(host: String, login: Login)] = []
    /// The `default` entry: for any host, which here means only the origin the user named.
    package var fallback: Login?

    package static func == (a: Netrc, b: Netrc) -> Bool {
        a.fallback == b.fallback && a.machines.map(\.host) == b.machines.map(\.host)
            && a.machines.map(\.login) == b.machines.map(\.login)
    }

    /// The `machine` entry for `host` (compared without case), if any.
    package func login(forHost host: String) -> Login? {
        machines.first { $0.host.lowercased() == host.lowercased() }?.login
    }

    /// Parses netrc text: whitespace-separated tokens, `"quoted"` tokens with backslash escapes,
    /// `macdef` bodies (up to an empty line) skipped, `account` ignored. An entry without a
    /// password is left out.
    package static func parse(_ text: String) -> Netrc {
        var netrc = Netrc()
        var tokens = Tokens(text)
        var host: String?
        var isDefault = false
        var login: String?
        var password: String?
        func commit() {
            if let password {
                let entry = Login(login: login ?? "", password: password)
                if isDefault { if netrc.fallback == nil { netrc.fallback = entry } }
                else if let host { netrc.machines.append((host, entry)) }
            }
            host = nil; isDefault = false; login = nil; password = nil
        }
        while let token = tokens.next() {
            switch token {
            case "machine":
                commit()
                host = tokens.next()
            case "default":
                commit()
                isDefault = true
            case "login": login = tokens.next()
            case "password": password = tokens.next()
            case "account": _ = tokens.next()
            case "macdef":
                commit()
                tokens.skipMacro()
            default: break
            }
        }
        commit()
        return netrc
    }

    /// Reads the netrc file at `path`; `nil` when there is none. A file other users could have
    /// written (writable by group or others, or owned by someone else than the caller or root)
    /// is refused, as ssh refuses such a config: its logins could have been planted.
    package static func load(path: String) throws(DownloadError) -> Netrc? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw DownloadError(.fileSystem(errno: code), "cannot read the netrc file \(path): \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        if let problem = FilePermissions.problem(owner: info.st_uid, mode: info.st_mode, caller: geteuid(),
                                                 groupIsPrivate: FilePermissions.isPrivateGroup(info.st_gid, of: info.st_uid)) {
            throw DownloadError(.invalidOption, "the netrc file \(path) \(problem): refusing to send its logins (chmod go-w \(path))")
        }
        let bytes: [UInt8]
        do {
            bytes = try FileDescriptor(fd, path: path).read(upTo: 1 << 20)
        } catch {
            throw DownloadError(.fileSystem(errno: error.errno), "cannot read the netrc file \(path): \(String(cString: strerror(error.errno)))")
        }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    /// The `machine` entries with a login and a password, as netrc text for libcurl (quoted, so
    /// any character survives; libcurl reads quoted tokens since 7.84). No `default`, and no
    /// entry lacking a login or password (what libcurl 7.88 mishandles on redirects,
    /// CVE-2024-11053).
    package var machineText: String {
        func quoted(_ token: String) -> String {
            var out = "\""
            for character in token {
                if character == "\\" || character == "\"" { out.append("\\") }
                out.append(character)
            }
            return out + "\""
        }
        return machines.filter { !$0.login.login.isEmpty && !$0.login.password.isEmpty }
            .map { "machine \(quoted($0.host)) login \(quoted($0.login.login)) password \(quoted($0.login.password))\n" }
            .joined()
    }

    /// A file with no name holding ``machineText``, readable by libcurl at ``path``
    /// (`/proc/self/fd/N`) for as long as this lives.
    package final class MachineFile: Sendable, Equatable {
        package let descriptor: Int32
        package var path: String { "/proc/self/fd/\(descriptor)" }

        /// `nil` when no file can be made (no `O_TMPFILE` there) or written.
        package init?(text: String, directory: String) {
            let fd = cfs_open_anonymous(directory)
            guard fd >= 0 else { return nil }
            do {
                try FileDescriptor(fd, path: "netrc").writeAll(Array(text.utf8))
            } catch {
                close(fd)
                return nil
            }
            descriptor = fd
        }

        deinit { close(descriptor) }

        package static func == (a: MachineFile, b: MachineFile) -> Bool { a === b }
    }

    /// The netrc file read by default: `$NETRC`, else `~/.netrc`.
    package static var defaultPath: String? {
        Environment.value("NETRC") ?? Environment.value("HOME").map { $0 + "/.netrc" }
    }

    private struct Tokens {
        private var scalars: [Unicode.Scalar]
        private var index = 0

        init(_ text: String) { scalars = Array(text.unicodeScalars) }

        private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r"
        }

        mutating func next() -> String? {
            while index < scalars.count, Self.isSpace(scalars[index]) { index += 1 }
            guard index < scalars.count else { return nil }
            var token = String.UnicodeScalarView()
            if scalars[index] == "\"" {
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\", index + 1 < scalars.count { index += 1 }
                    token.append(scalars[index])
                    index += 1
                }
                index += 1
            } else {
                while index < scalars.count, !Self.isSpace(scalars[index]) {
                    token.append(scalars[index])
                    index += 1
                }
            }
            return String(token)
        }

        /// Skips a `macdef` name and body: everything up to an empty line.
        mutating func skipMacro() {
            while index < scalars.count {
                if scalars[index] == "\n", index + 1 < scalars.count, scalars[index + 1] == "\n" || scalars[index + 1] == "\r" {
                    index += 1
                    return
                }
                index += 1
            }
        }
    }

    package init(machines: [(host: String, login: Login)] = [], fallback: Login? = nil) {
        self.machines = machines
        self.fallback = fallback
    }
}

/// Whether a file holding settings or secrets could have been written by someone else.
package enum FilePermissions {
    /// What is wrong with the file at `path` (see ``problem(owner:mode:caller:groupIsPrivate:)``), or `nil`
    /// when it is fine or missing.
    public static func problem(ofFileAt path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return problem(owner: info.st_uid, mode: info.st_mode, caller: geteuid(),
                       groupIsPrivate: isPrivateGroup(info.st_gid, of: info.st_uid))
    }

    /// Whether `group` is `user`'s private group (Debian's and Fedora's user private groups:
    /// named after the user, its primary group, no other member), whose write bit under umask 002
    /// gives no one else access.
    public static func isPrivateGroup(_ group: gid_t, of user: uid_t) -> Bool {
        guard let account = getpwuid(user), account.pointee.pw_gid == group, let entry = getgrgid(group) else { return false }
        guard String(cString: entry.pointee.gr_name) == String(cString: account.pointee.pw_name) else { return false }
        if let members = entry.pointee.gr_mem, let first = members.pointee {
            // The user may be listed as a member of their own group; anyone else may not.
            var index = 0
            var member: UnsafeMutablePointer<CChar>? = first
            while let name = member {
                if String(cString: name) != String(cString: account.pointee.pw_name) { return false }
                index += 1
                member = members[index]
            }
        }
        return true
    }

    /// What is wrong with a file of `owner` and `mode` read by `caller`, or `nil` when only the
    /// caller (or root) can have written it.
    public static func problem(owner: uid_t, mode: mode_t, caller: uid_t, groupIsPrivate: Bool = false) -> String? {
        if owner != caller && owner != 0 { return "belongs to another user (uid \(owner))" }
        if mode & 0o002 != 0 || (mode & 0o020 != 0 && !groupIsPrivate) {
            return "is writable by \(mode & 0o002 != 0 ? "every user" : "its group") (mode \(String(mode & 0o777, radix: 8)))"
        }
        return nil
    }
}
