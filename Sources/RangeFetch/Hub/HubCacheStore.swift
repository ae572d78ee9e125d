#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import FoundationEssentials

/// Where a repository's files go: the Hub's cache (``HubCacheStore``) or a plain folder
/// (``HubLocalFolderStore``). Files are fetched into ``staging`` under their blob's name, proven
/// there, then put in place.
///
/// Nothing unproven takes a final name: a large file is named by its sha256 only after the
/// batch checked it (the engine renames it into place only then); a small file is fetched as
/// `GITID.unverified` and renamed to `GITID` once its git blob id matches (``HubStaging``), so
/// huggingface_hub, which trusts any blob present under its ETag, never finds wrong bytes there.
protocol HubStore {
    /// The folder files are fetched into (the batch's directory).
    var staging: String { get }
    /// What the user is given: the snapshot folder, or the local folder.
    var destination: String { get }
    /// The selected files not yet in place (all of them when the store replaces all), one per
    /// blob (two paths with the same bytes are fetched once).
    func missing(_ files: [HubFile]) -> [HubFile]
    /// Where `file` appears once in place.
    func placedPath(_ file: HubFile) -> String
    /// Proves the small files just fetched and puts every one of `files` in place.
    /// - Throws: `checksumMismatch` naming the first small file whose bytes are not its git id
    ///   (they are removed; nothing of it is put in place), or a file-system error naming the path.
    func place(_ files: [HubFile], revision: String) throws(DownloadError)
}

/// The disk side of ``HubCacheLayout`` for one commit: which selected files are already cached,
/// and, once the batch has fetched the others, every file linked into the snapshot and the
/// revision's ref written.
struct HubCacheStore: HubStore {
    var layout: HubCacheLayout
    var commit: String
    /// Every selected blob is fetched again (`--force-download`): proven, then renamed over the
    /// one in place.
    var replacesAll = false

    var staging: String { layout.blobs }
    var destination: String { layout.snapshot(commit: commit) }

    func placedPath(_ file: HubFile) -> String { layout.snapshot(commit: commit, path: file.path) }

    /// Those whose blob is absent, or whose size is not the listing's.
    func missing(_ files: [HubFile]) -> [HubFile] {
        HubStaging.distinctBlobs(files).filter { replacesAll || HubStaging.size(layout.blobs + "/" + $0.blobName) != $0.size }
    }

    /// Links every file into the snapshot, and writes `refs/REVISION` when the revision is a
    /// name, not the commit itself.
    func place(_ files: [HubFile], revision: String) throws(DownloadError) {
        for file in files where !file.isLarge {
            try HubStaging.proveSmallFile(file, in: staging)
        }
        for file in files {
            let link = layout.snapshot(commit: commit, path: file.path)
            try HubStaging.makeParent(of: link)
            try HubStaging.replaceLink(at: link, target: HubCacheLayout.linkTarget(path: file.path, blobName: file.blobName))
        }
        if revision != commit {
            let reference = layout.reference(revision)
            try HubStaging.makeParent(of: reference)
            // huggingface_hub reads the file whole, without stripping a newline: none is written.
            try HubStaging.replaceFile(at: reference, contents: Array(commit.utf8))
        }
    }
}
