#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// Where the Hub is, who the user is to it, and where its cache lives: read from the environment
/// as huggingface_hub reads it (`HF_ENDPOINT`, `HF_TOKEN` or the token file, `HF_HOME`,
/// `HF_HUB_CACHE`), so both tools share one cache and one login.
package struct HubSettings: Sendable, Equatable {
    /// The Hub's origin, without a trailing `/` (`https://huggingface.co`; a mirror, or a test's
    /// server, through `HF_ENDPOINT`).
    package var endpoint: String
    /// The user's token: sent to ``endpoint`` only, never to the CDN a file is redirected to.
    package var token: String?
    /// The cache's root (`~/.cache/huggingface/hub`).
    package var cache: String

    package static let defaultEndpoint = "https://huggingface.co"

    /// The connections a repository's large files share, in all and to one host, unless told
    /// otherwise: the Hub's CDN caps each TCP connection (about 8.7 MB/s on most of its edges,
    /// huggingface/xet-core#821) and serves every file from one host, so a batch's usual 16
    /// would hold a repository to about 140 MB/s; 64 is what one file's `-n auto` may reach.
    package static let connections = 64

    package init(endpoint: String = defaultEndpoint, token: String? = nil, cache: String) {
        self.endpoint = endpoint
        self.token = token
        self.cache = cache
    }

    /// The settings `value` (an environment lookup) gives, huggingface_hub's rules:
    /// `HF_HOME` defaults to `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`; the token
    /// is `HF_TOKEN`, else the first line of `HF_TOKEN_PATH` (default `$HF_HOME/token`); the
    /// cache is `HF_HUB_CACHE` (or the older `HUGGINGFACE_HUB_CACHE`), else `$HF_HOME/hub`.
    package static func fromEnvironment(_ value: (String) -> String? = Environment.value,
                                        readFile: (String) -> String? = HubSettings.readSmallFile) -> HubSettings {
        let home = value("HF_HOME") ?? ((value("XDG_CACHE_HOME") ?? ((value("HOME") ?? "") + "/.cache")) + "/huggingface")
        var endpoint = value("HF_ENDPOINT") ?? defaultEndpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        let tokenFile = value("HF_TOKEN_PATH") ?? home + "/token"
        let token = value("HF_TOKEN") ?? readFile(tokenFile).flatMap {
            $0.split(whereSeparator: \.isNewline).first.map { String(String($0).trimmingASCIIWhitespace()) }
        }
        let cache = value("HF_HUB_CACHE") ?? value("HUGGINGFACE_HUB_CACHE") ?? home + "/hub"
        return HubSettings(endpoint: endpoint, token: token.flatMap { $0.isEmpty ? nil : $0 }, cache: cache)
    }

    /// A token file's text (at most 64 KiB), or `nil` when it cannot be read.
    package static func readSmallFile(_ path: String) -> String? {
        guard let descriptor = try? FileDescriptor.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { descriptor.close() }
        return (try? descriptor.read(upTo: 64 << 10)).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// Where a repository's files live in the Hub's cache, huggingface_hub's layout, so that its
/// own tools load them offline: `models--ORG--NAME/blobs/NAME` holds each file's bytes once,
/// `snapshots/COMMIT/PATH` is a relative link to its blob, and `refs/REV` names a branch's or
/// tag's commit. A pure value.
package struct HubCacheLayout: Sendable, Equatable {
    /// `HF_HUB_CACHE/models--ORG--NAME`.
    package var folder: String

    package init(cache: String, repository: HubRepository) {
        folder = (cache.hasSuffix("/") ? cache : cache + "/") + repository.cacheFolder
    }

    package var blobs: String { folder + "/blobs" }

    package func snapshot(commit: String) -> String { folder + "/snapshots/" + commit }

    /// Where `path` appears in the snapshot of `commit`.
    package func snapshot(commit: String, path: String) -> String { snapshot(commit: commit) + "/" + path }

    /// The file naming the commit `revision` is at.
    package func reference(_ revision: String) -> String { folder + "/refs/" + revision }

    /// What the snapshot's link at `path` holds: its blob, relative to the link's own folder
    /// (`../../blobs/NAME` at the top; one `../` more per folder in `path`).
    static func linkTarget(path: String, blobName: String) -> String {
        let depth = path.split(separator: "/").count + 1
        return String(repeating: "../", count: depth) + "blobs/" + blobName
    }
}
