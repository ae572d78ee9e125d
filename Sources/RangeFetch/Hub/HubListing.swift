import RangeFetchBase
import RangeFetchNetwork
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// One file of a repository, as the Hub's tree listing gives it. Untrusted: ``HubListing`` keeps
/// an entry only when its path is a plain relative path and its object ids are hex of the right
/// length, since both become names on disk.
package struct HubFile: Sendable, Equatable {
    /// The path inside the repository (`config.json`, `weights/model-00001-of-00002.safetensors`).
    package var path: String
    package var size: Int64
    /// The git blob id (SHA-1 of `blob SIZE\0` and the bytes): a small file's proof, and its
    /// blob's name in the cache.
    package var gitOID: String
    /// A large (LFS) file's sha256: its proof, and its blob's name in the cache.
    package var sha256: String?

    /// The name of its blob under `blobs/`: what huggingface_hub names it too (the ETag the Hub
    /// gives: `X-Linked-Etag`, the sha256, for a large file; the git blob id for a small one).
    package var blobName: String { sha256 ?? gitOID }
    package var isLarge: Bool { sha256 != nil }
}

/// The Hub's answers about a repository, read as pure values: the revision's commit and the
/// pages of the recursive tree listing.
enum HubListing {
    /// The commit a revision is at (`sha` of `GET /api/{kind}s/{id}/revision/{rev}`).
    static func commit(_ body: [UInt8], what: String) throws(DownloadError) -> String {
        struct Info: Decodable { var sha: String? }
        guard let info = try? JSONDecoder().decode(Info.self, from: Data(body)), let sha = info.sha else {
            throw DownloadError(.protocolViolation, "\(what): the Hub's answer names no commit (no \"sha\" in the repository's information)", url: what)
        }
        guard isHex(sha, count: 40) else {
            throw DownloadError(.protocolViolation, "\(what): the Hub's commit '\(sha.prefix(80))' is not 40 hex digits", url: what)
        }
        return sha.lowercased()
    }

    /// The files of one listing page (directories are left out: the listing is recursive).
    /// - Throws: `protocolViolation` for a page that is not a listing, or an entry whose path
    ///   could leave the repository's folder or whose ids are not hex.
    static func files(_ body: [UInt8], what: String) throws(DownloadError) -> [HubFile] {
        struct Entry: Decodable {
            struct LFS: Decodable { var oid: String; var size: Int64 }
            var type: String
            var path: String
            var oid: String?
            var size: Int64?
            var lfs: LFS?
        }
        guard let entries = try? JSONDecoder().decode([Entry].self, from: Data(body)) else {
            throw DownloadError(.protocolViolation, "\(what): the Hub's answer is not a file listing (a JSON array of entries)", url: what)
        }
        var files: [HubFile] = []
        for entry in entries where entry.type == "file" {
            func bad(_ why: String) -> DownloadError {
                DownloadError(.protocolViolation, "\(what): the listed file '\(entry.path.prefix(200))' \(why); nothing was downloaded", url: what)
            }
            guard isSafePath(entry.path) else { throw bad("is not a plain relative path") }
            guard let oid = entry.oid, isHex(oid, count: 40) else { throw bad("has no 40-hex-digit git id") }
            var sha256: String?
            var size = entry.size ?? -1
            if let lfs = entry.lfs {
                guard isHex(lfs.oid, count: 64) else { throw bad("has an LFS id that is not a sha256") }
                sha256 = lfs.oid.lowercased()
                size = lfs.size
            }
            guard size >= 0 else { throw bad("has no size") }
            files.append(HubFile(path: entry.path, size: size, gitOID: oid.lowercased(), sha256: sha256))
        }
        return files
    }

    /// A path that stays inside the folder it is joined to: relative, components neither empty
    /// nor `.` nor `..`, no NUL or control characters, no backslash.
    static func isSafePath(_ path: String) -> Bool {
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        return !path.isEmpty && path.utf8.count <= 4096
            && components.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." && $0.utf8.count <= 255 }
            && path.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) && $0 != "\\" }
    }

    static func isHex(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0 | 0x20) }
    }
}

/// Which files of a listing are wanted: huggingface_hub's `allow_patterns` and
/// `ignore_patterns` (`--include`, `--exclude`), as `fnmatch` globs where `*` also matches `/`,
/// and a pattern ending in `/` means everything under it.
///
/// With a ``shard``, only the files whose blob hashes to it (``ShardSelector``, on the blob's
/// name): N machines filling one shared cache split the repository with no coordinator, and two
/// paths with the same bytes fall to the same machine.
package struct HubFileFilter: Sendable, Equatable {
    package var include: [String] = []
    package var exclude: [String] = []
    package var shard: ShardSelector?

    package init(include: [String] = [], exclude: [String] = [], shard: ShardSelector? = nil) {
        self.include = include
        self.exclude = exclude
        self.shard = shard
    }

    package func wants(_ path: String) -> Bool {
        (include.isEmpty || include.contains { Self.matches($0, path) }) && !exclude.contains { Self.matches($0, path) }
    }

    package func selects(_ file: HubFile) -> Bool {
        wants(file.path) && shard.map { $0.includes(file.blobName) } != false
    }

    static func matches(_ pattern: String, _ path: String) -> Bool {
        let pattern = pattern.hasSuffix("/") ? pattern + "*" : pattern
        return fnmatch(pattern, path, 0) == 0
    }
}
