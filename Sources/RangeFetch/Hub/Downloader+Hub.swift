import Foundation

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
    /// The batch that fetched the others; `nil` when none needed fetching.
    package var batch: BatchSummary?
}

extension Downloader {
    /// Downloads the files of `repository` that `filter` selects into the Hub's cache, laid out
    /// as huggingface_hub lays it out (``HubCacheLayout``), so its tools load them offline.
    ///
    /// The revision is pinned to its commit first; every file is fetched at that commit through
    /// the Hub (`/resolve/COMMIT/PATH`), whose redirect of a large file to its CDN is followed
    /// without the token, and re-resolved when its signature expires mid-file. A large file is
    /// proven by the listing's sha256 as it arrives; a small one by its git blob id once it is on
    /// disk, before it takes its name. Files already in the cache cost no request to the CDN.
    /// The files run as one batch (`batch.jobs` at once, one connection budget).
    /// - Throws: the listing's errors (a repository not found or private, a revision not found,
    ///   rate limits that do not end), a path two files would share; a file that fails is in the
    ///   summary's batch, and a small file whose bytes are not its git id is a `checksumMismatch`
    ///   naming it (its bytes are removed, nothing is linked).
    ///
    /// With `localFolder`, the files themselves go there instead, with the metadata
    /// `hf download --local-dir` keeps (``HubLocalFolderStore``).
    package func download(
        hub repository: HubRepository, settings: HubSettings, filter: HubFileFilter, batch given: BatchOptions,
        localFolder: String? = nil, events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(DownloadError) -> HubSummary {
        var options = self.options
        if let token = settings.token { options.request.headers.append("Authorization: Bearer \(token)") }
        let request = options.request
        let cancellation = CancellationFlag()
        let (commit, listed) = try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> (String, [HubFile]) in
            var bound = request
            try bound.bindSecrets(to: settings.endpoint)
            let api = HubAPI(settings: settings, repository: repository,
                             fetcher: SmallGet(request: bound, cancellation: cancellation, loop: try CurlLoop()))
            let commit = try api.commit()
            return (commit, try api.files(commit: commit))
        }
        let files = listed.filter(filter.selects)
        let store: any HubStore = if let localFolder {
            HubLocalFolderStore(folder: localFolder, commit: commit)
        } else {
            HubCacheStore(layout: HubCacheLayout(cache: settings.cache, repository: repository), commit: commit)
        }
        let missing = store.missing(files)
        var summary = HubSummary(repository: repository, commit: commit, snapshot: store.destination,
                                 selected: files.count, alreadyCached: files.count - missing.count)
        if !missing.isEmpty {
            try HubStaging.makeDirectory(store.staging)
            var batch = given
            batch.directory = store.staging
            let entries = missing.map { file in
                var entry = BatchEntry(url: repository.resolveURL(endpoint: settings.endpoint, commit: commit, path: file.path),
                                       output: HubStaging.downloadName(file), origin: "\(repository.description):\(file.path)")
                entry.expectedSize = file.size
                if let sha256 = file.sha256, let digest = DigestValue(algorithm: .sha256, hex: sha256) { entry.checksums = [digest] }
                return entry
            }
            var fetched = try await Downloader(options: options).download(batch: entries, options: batch, events: events)
            // A fetched file's result names where it appears, not its blob in the staging folder
            // (one that did not finish keeps the staging path: its partial file is there).
            for index in fetched.files.indices where missing.indices.contains(fetched.files[index].index)
                && [.downloaded, .alreadyComplete].contains(fetched.files[index].status) {
                fetched.files[index].path = store.placedPath(missing[fetched.files[index].index])
            }
            summary.batch = fetched
            guard fetched.succeeded else { return summary }
        }
        try store.place(files, revision: repository.revision)
        return summary
    }
}
