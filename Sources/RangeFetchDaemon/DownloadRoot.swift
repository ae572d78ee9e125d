#if canImport(Glibc)
import Glibc
#endif

/// Where RPC calls may write: `dir` and `out` stay inside the download root. A pure lexical
/// rule first (no `..` out of it, no absolute path elsewhere), then the directory that exists
/// is resolved through its links, which must not lead out either.
struct DownloadRoot: Sendable {
    /// An absolute path without `.` or `..` components.
    let path: String

    init(_ path: String) {
        self.path = Self.normalized(path.hasPrefix("/") ? path : Self.currentDirectory() + "/" + path) ?? "/"
    }

    /// The directory and file name for `dir` and `out` (either may be absent); refuses a path
    /// that leaves the root.
    func place(dir: String?, out: String?) throws(RPCFailure) -> (directory: String, name: String?) {
        var directory = path
        if let dir, !dir.isEmpty {
            guard let inside = inside(dir.hasPrefix("/") ? dir : path + "/" + dir) else {
                throw RPCFailure("dir '\(dir)' is outside the download root \(path)")
            }
            directory = inside
        }
        guard let out, !out.isEmpty else { return (directory, nil) }
        guard !out.hasPrefix("/"), let file = inside(directory + "/" + out), file != directory else {
            throw RPCFailure("out '\(out)' is outside the download root \(path)")
        }
        let slash = file.lastIndex(of: "/")!
        return (String(file[..<slash]), String(file[file.index(after: slash)...]))
    }

    /// `candidate` normalized, if it lies in the root lexically and through its existing links.
    private func inside(_ candidate: String) -> String? {
        guard let normal = Self.normalized(candidate), Self.contains(path, normal) else { return nil }
        // The deepest directory that exists, resolved through its links.
        var existing = normal
        while !existing.isEmpty, access(existing, F_OK) != 0 {
            existing = String(existing[..<(existing.lastIndex(of: "/") ?? existing.startIndex)])
        }
        guard let real = Self.realPath(existing.isEmpty ? "/" : existing), let root = Self.realPath(path) else { return nil }
        return Self.contains(root, real) ? normal : nil
    }

    /// `path` with `.` and `..` taken away; `nil` when `..` climbs above `/`.
    static func normalized(_ path: String) -> String? {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            switch part {
            case ".": continue
            case "..":
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    static func contains(_ root: String, _ path: String) -> Bool {
        root == "/" || path == root || path.hasPrefix(root + "/")
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func currentDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "/" }
        defer { free(cwd) }
        return String(cString: cwd)
    }
}
