import RangeFetchBase
import RangeFetchNetwork
import FoundationEssentials

/// What a repository download did.
package struct HubSummary: Sendable {
    package var repository: HubRepository
    /// The commit the revision was at: the snapshot's name.
    package var commit: String
    /// Where the repository's files appear under their own paths: the snapshot folder, or the
    /// local folder.
    package var snapshot: String
    /// Files the filter selected.
    package var selected: Int
    /// Of those, files already in the cache (nothing asked of the CDN for them).
    package var alreadyCached: Int
    /// Small files fetched whole from the Hub.
    package var smallFetched = 0
    /// The batch that fetched the large ones; `nil` when none needed fetching.
    package var batch: BatchSummary?
}

extension Downloader {
    /// Downloads the files of `repository` that `filter` selects into the Hub's cache, laid out
    /// as huggingface_hub lays it out (``HubCacheLayout``), so its tools load them offline.
    ///
    /// The revision is pinned to its commit first; every file is fetched at that commit through
    /// the Hub (`/resolve/COMMIT/PATH`). Large files run as one batch (`batch.jobs` at once, one
    /// connection budget): the Hub's redirect to its CDN is followed without the token, and
    /// re-resolved when its signature expires mid-file, and each is proven by the listing's sha256
    /// as it arrives. Small files are fetched whole from the Hub first, one after another under
    /// its rate limit, each proven by its git blob id before it is written. Files already in place
    /// cost no request but the listing's.
    /// - Throws: the listing's errors (a repository not found or private, a revision not found,
    ///   rate limits that do not end), a path two files would share; a file that fails is in the
    ///   summary's batch, and a small file whose bytes are not its git id is a `checksumMismatch`
    ///   naming it (its bytes are removed, nothing is linked).
    ///
    /// With `localFolder`, the files themselves go there instead, with the metadata
    /// `hf download --local-dir` keeps (``HubLocalFolderStore``).
    ///
    /// With `force`, every selected file is fetched again, even one in place (`hf download
    /// --force-download`): each new file is proven in the staging folder and renamed over the
    /// old one, so the old bytes stay whole until then (a reader holding them keeps them).
    package func download(
        hub repository: HubRepository, settings: HubSettings, filter: HubFileFilter, batch given: BatchOptions,
        localFolder: String? = nil, force: Bool = false, events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> HubSummary {
        var options = self.options
        // The batch's blobs in place are fetched again into NAME.part and renamed over them.
        if force { options.existingFile = .overwrite }
        if let token = settings.token { options.request.headers.append("Authorization: Bearer \(token)") }
        let request = options.request
        let cancellation = CancellationFlag()
        let api: @Sendable () throws(DownloadError) -> HubAPI = { () throws(DownloadError) -> HubAPI in
            var bound = request
            try bound.bindSecrets(to: settings.endpoint)
            return HubAPI(settings: settings, repository: repository,
                          fetcher: SmallGet(request: bound, cancellation: cancellation, loop: try CurlLoop()))
        }
        let (commit, listed) = try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> (String, [HubFile]) in
            let hub = try api()
            let commit = try hub.commit()
            return (commit, try hub.files(commit: commit))
        }
        let files = listed.filter(filter.selects)
        let store: any HubStore & Sendable = if let localFolder {
            HubLocalFolderStore(folder: localFolder, commit: commit, replacesAll: force)
        } else {
            HubCacheStore(layout: HubCacheLayout(cache: settings.cache, repository: repository), commit: commit, replacesAll: force)
        }
        let missing = store.missing(files)
        var summary = HubSummary(repository: repository, commit: commit, snapshot: store.destination,
                                 selected: files.count, alreadyCached: Self.inPlace(files, fetching: missing))
        let place = { () async throws(DownloadError) in
            // Links, renames and synced writes: on a thread of their own, not the task pool's.
            try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) in
                try store.place(files, revision: repository.revision)
            }
        }
        guard !missing.isEmpty else {
            try await place()
            return summary
        }
        try HubStaging.makeDirectory(store.staging)
        // Small files whole from the Hub, one after another (one call each, under its rate limit);
        // large ones as a batch of ranges from the CDN.
        let small = missing.filter { !$0.isLarge && $0.size <= HubAPI.largestSmallFile }
        let large = missing.filter { $0.isLarge || $0.size > HubAPI.largestSmallFile }
        let staging = store.staging
        summary.smallFetched = try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> Int in
            let hub = try api()
            for file in small {
                let bytes = try hub.smallFile(file, commit: commit)
                try HubStaging.replaceFile(at: staging + "/" + file.blobName, contents: bytes)
            }
            return small.count
        }
        if !large.isEmpty {
            var batch = given
            batch.directory = store.staging
            let entries = large.map { file in
                var entry = BatchEntry(url: repository.resolveURL(endpoint: settings.endpoint, commit: commit, path: file.path),
                                       output: HubStaging.downloadName(file), origin: "\(repository.description):\(file.path)")
                entry.expectedSize = file.size
                if let sha256 = file.sha256, let digest = DigestValue(algorithm: .sha256, hex: sha256) { entry.checksums = [digest] }
                return entry
            }
            var fetched = try await Downloader(options: options).download(batch: entries, options: batch, events: events)
            // A fetched file's result names where it appears, not its blob in the staging folder
            // (one that did not finish keeps the staging path: its partial file is there).
            for index in fetched.files.indices where large.indices.contains(fetched.files[index].index)
                && [.downloaded, .alreadyComplete].contains(fetched.files[index].status) {
                fetched.files[index].path = store.placedPath(large[fetched.files[index].index])
            }
            summary.batch = fetched
            guard fetched.succeeded else { return summary }
        }
        try await place()
        return summary
    }

    /// How many of `files` are in place: those whose blob is not among those `fetching` (two paths
    /// sharing a blob are fetched once, and neither is in place).
    static func inPlace(_ files: [HubFile], fetching: [HubFile]) -> Int {
        let fetched = Set(fetching.map(\.blobName))
        return files.filter { !fetched.contains($0.blobName) }.count
    }
}
