#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import FoundationEssentials

/// What both stores do in their staging folder: names, proofs, and the file-system calls.
enum HubStaging {
    /// The suffix of a small file's bytes not yet proven.
    static let unverifiedSuffix = ".unverified"

    /// The name a file is fetched under in the staging folder.
    static func downloadName(_ file: HubFile) -> String {
        file.isLarge ? file.blobName : file.blobName + unverifiedSuffix
    }

    /// The first file of each blob.
    static func distinctBlobs(_ files: [HubFile]) -> [HubFile] {
        var seen: Set<String> = []
        return files.filter { seen.insert($0.blobName).inserted }
    }

    /// A small file's blob, proven: the `.unverified` bytes renamed to the blob's name when their
    /// git blob id is the listing's; a blob already there is left alone.
    static func proveSmallFile(_ file: HubFile, in staging: String) throws(DownloadError) {
        let blob = staging + "/" + file.blobName
        let fetched = blob + unverifiedSuffix
        guard size(fetched) != nil else { return }
        let actual = try gitBlobID(ofFileAt: fetched)
        guard actual == file.gitOID else {
            unlink(fetched)
            throw DownloadError(.checksumMismatch, "\(file.path): its bytes have git id \(actual), the Hub's listing says \(file.gitOID); removed, nothing was linked (run again to fetch it again)")
        }
        guard rename(fetched, blob) == 0 else { throw failure("rename", fetched) }
    }

    /// The git blob id of `bytes`: SHA-1 of `blob SIZE\0` and them.
    static func gitBlobID(of bytes: [UInt8]) -> String {
        let digest = Digest(.sha1)
        digest.update(Array("blob \(bytes.count)\0".utf8))
        digest.update(bytes)
        return digest.finalize().hex
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
            throw DownloadError(.fileSystem(errno: EIO), "\(path): cannot make this folder of the Hub's cache (\(error))",
                                remedy: .chooseWritableLocation)
        }
    }

    /// Makes the folder `path` is in.
    static func makeParent(of path: String) throws(DownloadError) {
        try makeDirectory(String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]))
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
            // Durable before it takes its name: a crash leaves the old file or this one, whole.
            try descriptor.synchronize()
        } catch {
            unlink(temporary)
            throw error.downloadError
        }
        guard rename(temporary, path) == 0 else { throw failure("rename", path) }
    }

    /// A copy of the file at `source` at `path`, written beside it and renamed over it.
    static func replaceFile(at path: String, copying source: String) throws(DownloadError) {
        let temporary = path + ".rangefetch-tmp-\(getpid())"
        unlink(temporary)
        do {
            try FileManager.default.copyItem(atPath: source, toPath: temporary)
        } catch {
            unlink(temporary)
            throw DownloadError(.fileSystem(errno: EIO), "\(path): cannot copy \(source) there (\(error))")
        }
        guard rename(temporary, path) == 0 else { throw failure("rename", path) }
    }

    static func failure(_ function: String, _ path: String) -> DownloadError {
        SystemCallError(function: function, path: path, errno: errno).downloadError
    }
}
