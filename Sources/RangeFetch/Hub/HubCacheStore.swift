#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The disk side of ``HubCacheLayout`` for one commit: which selected files are already cached,
/// and, once the batch has fetched the others, each small file proven by its git blob id, every
/// file linked into the snapshot, and the revision's ref written.
///
/// Nothing unproven takes a blob's name: a large file is named by its sha256 only after the
/// batch checked it (the engine renames it into place only then); a small file is fetched as
/// `GITID.unverified` and renamed to `GITID` once its git blob id matches, so huggingface_hub,
/// which trusts any blob present under its ETag, never finds wrong bytes there.
struct HubCacheStore {
    var layout: HubCacheLayout
    var commit: String

    /// The suffix of a small file's bytes not yet proven.
    static let unverifiedSuffix = ".unverified"

    /// The name a file is fetched under in `blobs/`.
    static func downloadName(_ file: HubFile) -> String {
        file.isLarge ? file.blobName : file.blobName + unverifiedSuffix
    }

    /// The files not yet cached, one per blob (two paths with the same bytes share a blob, so
    /// they are fetched once): those whose blob is absent, or whose size is not the listing's.
    func missing(_ files: [HubFile]) throws(DownloadError) -> [HubFile] {
        var seen: Set<String> = []
        return files.filter { file in
            guard seen.insert(file.blobName).inserted else { return false }
            return Self.size(layout.blobs + "/" + file.blobName) != file.size
        }
    }

    /// Makes `blobs/` (and the folders above it).
    func prepare() throws(DownloadError) {
        try Self.makeDirectory(layout.blobs)
    }

    /// Proves the small files just fetched, links every file of `files` into the snapshot, and
    /// writes `refs/REVISION` when the revision is a name, not the commit itself.
    /// - Throws: `checksumMismatch` naming the first small file whose bytes are not its git id
    ///   (they are removed; nothing of it is linked), or a file-system error naming the path.
    func link(_ files: [HubFile], revision: String) throws(DownloadError) {
        for file in files where !file.isLarge {
            try proveSmallFile(file)
        }
        for file in files {
            let link = layout.snapshot(commit: commit, path: file.path)
            try Self.makeDirectory(String(link[..<(link.lastIndex(of: "/") ?? link.endIndex)]))
            try Self.replaceLink(at: link, target: HubCacheLayout.linkTarget(path: file.path, blobName: file.blobName))
        }
        if revision != commit {
            let reference = layout.reference(revision)
            try Self.makeDirectory(String(reference[..<(reference.lastIndex(of: "/") ?? reference.endIndex)]))
            // huggingface_hub reads the file whole, without stripping a newline: none is written.
            try Self.replaceFile(at: reference, contents: Array(commit.utf8))
        }
    }

    /// A small file's blob, proven: the `.unverified` bytes renamed into place when their git
    /// blob id is the listing's; a blob already in place is left alone.
    private func proveSmallFile(_ file: HubFile) throws(DownloadError) {
        let blob = layout.blobs + "/" + file.blobName
        let fetched = blob + Self.unverifiedSuffix
        guard Self.size(fetched) != nil else { return }
        let actual = try Self.gitBlobID(ofFileAt: fetched)
        guard actual == file.gitOID else {
            unlink(fetched)
            throw DownloadError(.checksumMismatch, "\(file.path): its bytes have git id \(actual), the Hub's listing says \(file.gitOID); removed, nothing was linked (run again to fetch it again)")
        }
        guard rename(fetched, blob) == 0 else { throw Self.failure("rename", fetched) }
    }

    /// The git blob id of the file at `path`: SHA-1 of `blob SIZE\0` and its bytes.
    static func gitBlobID(ofFileAt path: String) throws(DownloadError) -> String {
        do {
            let descriptor = try FileDescriptor.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            defer { descriptor.close() }
            let size = Int64(try descriptor.status().st_size)
            let digest = Digest(.sha1)
            digest.update(Array("blob \(size)\0".utf8))
            try FileDescriptor.withReadBackBuffer { (buffer) throws(SystemCallError) in
                _ = try descriptor.readBack(ByteRange(0, size), into: buffer) { _, bytes in digest.update(bytes) }
            }
            return digest.finalize().hex
        } catch {
            throw error.downloadError
        }
    }

    // MARK: The file system

    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    static func makeDirectory(_ path: String) throws(DownloadError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw DownloadError(.fileSystem(errno: EIO), "\(path): cannot make this folder of the Hub's cache (\(error.localizedDescription))",
                                remedy: .chooseWritableLocation)
        }
    }

    /// A symbolic link at `path` to `target`, replacing what is there at once (a link made
    /// beside it, then renamed over it).
    static func replaceLink(at path: String, target: String) throws(DownloadError) {
        // Named by process: shards filling one cache write the same ref at once.
        let temporary = path + ".rangefetch-link-\(getpid())"
        unlink(temporary)
        guard symlink(target, temporary) == 0 else { throw failure("symlink", temporary) }
        guard rename(temporary, path) == 0 else {
            let error = failure("rename", path)
            unlink(temporary)
            throw error
        }
    }

    /// `contents` at `path`, written beside it and renamed over it.
    static func replaceFile(at path: String, contents: [UInt8]) throws(DownloadError) {
        let temporary = path + ".rangefetch-tmp-\(getpid())"
        unlink(temporary)
        do {
            let descriptor = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode: 0o644)
            defer { descriptor.close() }
            try descriptor.writeAll(contents)
        } catch {
            unlink(temporary)
            throw error.downloadError
        }
        guard rename(temporary, path) == 0 else { throw failure("rename", path) }
    }

    private static func failure(_ function: String, _ path: String) -> DownloadError {
        SystemCallError(function: function, path: path, errno: errno).downloadError
    }
}
