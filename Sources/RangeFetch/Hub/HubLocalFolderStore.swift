#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import FoundationEssentials

/// `--local-dir DIR`: the files themselves at `DIR/PATH`, as `hf download --local-dir` leaves
/// them, with its metadata, so huggingface_hub knows them as up to date: for each file
/// `DIR/.cache/huggingface/download/PATH.metadata` holds the commit, the ETag (the blob's name)
/// and the time it was written, and `DIR/.cache/huggingface` has its `.gitignore` and
/// `CACHEDIR.TAG`. Files are fetched into `DIR/.cache/huggingface/rangefetch/` under their
/// blob's name and moved to their path once proven; a file already there whose metadata names
/// its blob, at its size, is left alone (unless the store replaces all).
struct HubLocalFolderStore: HubStore {
    var folder: String
    var commit: String
    /// Every selected file is fetched again (`--force-download`): proven, then renamed over the
    /// one at its path.
    var replacesAll = false

    var bookkeeping: String { folder + "/.cache/huggingface" }
    var staging: String { bookkeeping + "/rangefetch" }
    var destination: String { folder }

    func placedPath(_ file: HubFile) -> String { folder + "/" + file.path }

    func metadata(_ path: String) -> String { bookkeeping + "/download/" + path + ".metadata" }

    func missing(_ files: [HubFile]) -> [HubFile] {
        HubStaging.distinctBlobs(files.filter { replacesAll || !isInPlace($0) })
    }

    /// Its metadata names its blob and the file has the listing's size.
    func isInPlace(_ file: HubFile) -> Bool {
        guard let text = HubSettings.readSmallFile(metadata(file.path)) else { return false }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.count >= 2 && lines[1] == file.blobName && HubStaging.size(folder + "/" + file.path) == file.size
    }

    /// Moves each proven blob to its path (a copy for every path but the last that shares it),
    /// then writes its metadata, with a time no earlier than the file's.
    func place(_ files: [HubFile], revision: String) throws(DownloadError) {
        for file in files where !file.isLarge {
            try HubStaging.proveSmallFile(file, in: staging)
        }
        let waiting = files.filter { replacesAll || !isInPlace($0) }
        let lastUse = Dictionary(waiting.enumerated().map { ($0.element.blobName, $0.offset) }) { _, later in later }
        for (index, file) in waiting.enumerated() {
            let staged = staging + "/" + file.blobName
            let target = folder + "/" + file.path
            try HubStaging.makeParent(of: target)
            if lastUse[file.blobName] == index {
                guard rename(staged, target) == 0 else { throw HubStaging.failure("rename", target) }
            } else {
                try HubStaging.replaceFile(at: target, copying: staged)
            }
            let written = metadata(file.path)
            try HubStaging.makeParent(of: written)
            try HubStaging.replaceFile(at: written, contents: Array("\(commit)\n\(file.blobName)\n\(Date().timeIntervalSince1970)\n".utf8))
        }
        try HubStaging.makeDirectory(bookkeeping)
        for (name, text) in [(".gitignore", "*"), ("CACHEDIR.TAG", Self.cacheDirectoryTag)] where HubStaging.size(bookkeeping + "/" + name) == nil {
            try HubStaging.replaceFile(at: bookkeeping + "/" + name, contents: Array(text.utf8))
        }
    }

    /// The Cache Directory Tagging Specification's tag, so backup tools skip the folder.
    static let cacheDirectoryTag = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by rangefetch (as huggingface_hub makes one).\n"
}
