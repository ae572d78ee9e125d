import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The pure rules of `hf://`: the text parsed into a repository, the Hub's answers read (and a
/// hostile listing refused), the filter, the settings from the environment, the cache's layout.
struct HubRulesTests {
    @Test(arguments: [
        ("hf://org/name", HubRepository.Kind.model, "org/name", "main", "models--org--name"),
        ("hf://models/org/name", .model, "org/name", "main", "models--org--name"),
        ("HF://datasets/org/my.set_1@v1.0", .dataset, "org/my.set_1", "v1.0", "datasets--org--my.set_1"),
        ("hf://spaces/org/demo@refs/pr/3", .space, "org/demo", "refs/pr/3", "spaces--org--demo"),
        ("hf://org/name@0123456789abcdef0123456789abcdef01234567", .model, "org/name", "0123456789abcdef0123456789abcdef01234567", "models--org--name"),
    ])
    func aRepositoryIsParsed(text: String, kind: HubRepository.Kind, id: String, revision: String, folder: String) throws {
        let repository = try HubRepository(text)
        #expect(repository.kind == kind && repository.id == id && repository.revision == revision)
        #expect(repository.cacheFolder == folder)
    }

    @Test(arguments: [
        ("hf://gpt2", "ORG/NAME"),
        ("hf://org/name/file.bin", "not ORG/NAME"),
        ("hf://org/../etc", "not ORG/NAME"),
        ("hf://org/..", "not a repository id"),
        ("hf://org--x/name", "not a repository id"),
        ("hf://org/.hidden", "not a repository id"),
        ("hf://org/na me", "not a repository id"),
        ("hf://org/name@../../x", "not a revision"),
        ("hf://org/name@", "not a revision"),
        ("hf://org/name@a b", "not a revision"),
        ("https://huggingface.co/org/name", "not an hf:// URL"),
    ])
    func aBadRepositoryIsRefusedSayingWhy(text: String, says: String) {
        #expect {
            try HubRepository(text)
        } throws: { error in
            let error = error as? DownloadError
            return error?.code == .invalidURL && error?.message.contains(says) == true && error?.message.contains("hf://ORG/NAME") == true
        }
    }

    @Test func itsURLsAreTheHubsOwn() throws {
        let model = try HubRepository("hf://org/name@refs/pr/1")
        let commit = String(repeating: "a", count: 40)
        #expect(model.revisionURL(endpoint: "http://h") == "http://h/api/models/org/name/revision/refs%2Fpr%2F1")
        #expect(model.treeURL(endpoint: "http://h", commit: commit) == "http://h/api/models/org/name/tree/\(commit)?recursive=true&expand=false")
        #expect(model.resolveURL(endpoint: "http://h", commit: commit, path: "sub dir/a+b.json")
                == "http://h/org/name/resolve/\(commit)/sub%20dir/a%2Bb.json")
        let dataset = try HubRepository("hf://datasets/org/set")
        #expect(dataset.resolveURL(endpoint: "http://h", commit: commit, path: "x") == "http://h/datasets/org/set/resolve/\(commit)/x")
    }

    static let oid = String(repeating: "1", count: 40)
    static let sha = String(repeating: "a", count: 64)

    @Test func aListingPageGivesItsFiles() throws {
        let page = """
            [{"type":"directory","oid":"\(Self.oid)","size":0,"path":"sub"},
             {"type":"file","oid":"\(Self.oid)","size":12,"path":"config.json"},
             {"type":"file","oid":"\(Self.oid.uppercased())","size":134,"path":"sub/model.safetensors",
              "lfs":{"oid":"\(Self.sha)","size":1000000,"pointerSize":134}}]
            """
        let files = try HubListing.files(Array(page.utf8), what: "hf://o/n")
        #expect(files == [
            HubFile(path: "config.json", size: 12, gitOID: Self.oid, sha256: nil),
            HubFile(path: "sub/model.safetensors", size: 1_000_000, gitOID: Self.oid, sha256: Self.sha),
        ])
        #expect(files[1].blobName == Self.sha && files[0].blobName == Self.oid)
        #expect(try HubListing.commit(Array("{\"sha\":\"\(Self.oid)\",\"siblings\":[]}".utf8), what: "x") == Self.oid)
    }

    /// A listing is a server's word: a path that would leave the snapshot, or an id that is not
    /// hex (it names a blob), refuses the whole repository before anything is written.
    @Test(arguments: [
        "../../.bashrc", "/etc/passwd", "a//b", "a/./b", "sub/..", "", "a\\u0000b", "a\\\\b", "x\\u0085y",
    ])
    func aHostileListedPathIsRefused(path: String) {
        let page = "[{\"type\":\"file\",\"oid\":\"\(Self.oid)\",\"size\":1,\"path\":\"\(path)\"}]"
        #expect(throws: DownloadError.self) { try HubListing.files(Array(page.utf8), what: "x") }
    }

    @Test(arguments: [
        "{\"type\":\"file\",\"oid\":\"../x\",\"size\":1,\"path\":\"a\"}",
        "{\"type\":\"file\",\"oid\":\"\(oid)\",\"size\":1,\"path\":\"a\",\"lfs\":{\"oid\":\"../../x\",\"size\":1}}",
        "{\"type\":\"file\",\"oid\":\"\(oid)\",\"path\":\"a\"}",
    ])
    func aListedIdThatIsNotHexIsRefused(entry: String) {
        #expect(throws: DownloadError.self) { try HubListing.files(Array("[\(entry)]".utf8), what: "x") }
    }

    @Test(arguments: [
        ([], [], "a/b.bin", true),
        (["*.safetensors"], [], "sub/model.safetensors", true),
        (["*.safetensors"], [], "config.json", false),
        (["sub/"], [], "sub/deep/x", true),
        ([], ["original/*"], "original/consolidated.pth", false),
        (["*.json"], ["tokenizer*"], "tokenizer.json", false),
    ])
    func theFilterIsHfDownloads(include: [String], exclude: [String], path: String, wanted: Bool) {
        #expect(HubFileFilter(include: include, exclude: exclude).wants(path) == wanted)
    }

    @Test(arguments: [
        (["HOME": "/home/u"], "https://huggingface.co", nil, "/home/u/.cache/huggingface/hub", "/home/u/.cache/huggingface/token"),
        (["HOME": "/home/u", "XDG_CACHE_HOME": "/c"], "https://huggingface.co", nil, "/c/huggingface/hub", "/c/huggingface/token"),
        (["HF_HOME": "/hf", "HF_ENDPOINT": "http://127.0.0.1:9/", "HF_TOKEN": "hf_x"], "http://127.0.0.1:9", "hf_x", "/hf/hub", "/hf/token"),
        (["HF_HOME": "/hf", "HF_HUB_CACHE": "/cache", "HF_TOKEN_PATH": "/t"], "https://huggingface.co", "from-file", "/cache", "/t"),
    ] as [([String: String], String, String?, String, String)])
    func settingsComeFromTheEnvironmentAsHuggingfaceHubReadsThem(
        environment: [String: String], endpoint: String, token: String?, cache: String, tokenFile: String
    ) {
        let settings = HubSettings.fromEnvironment({ environment[$0] }) { path in
            path == tokenFile && environment["HF_TOKEN_PATH"] != nil ? "from-file\nsecond line\n" : nil
        }
        #expect(settings == HubSettings(endpoint: endpoint, token: token, cache: cache))
    }

    /// Files in place: those whose blob is not fetched. Two paths sharing a blob are fetched once
    /// (the first stands for both) and neither is in place.
    @Test(arguments: [
        ([], 3), (["a.json"], 1), (["c.bin"], 2), (["a.json", "c.bin"], 0),
    ] as [([String], Int)])
    func filesInPlaceAreThoseWhoseBlobIsNotFetched(fetching: [String], inPlace: Int) {
        let files = [HubFile(path: "a.json", size: 2, gitOID: "11", sha256: nil),
                     HubFile(path: "copy/a.json", size: 2, gitOID: "11", sha256: nil),
                     HubFile(path: "c.bin", size: 9, gitOID: "22", sha256: "33")]
        #expect(Downloader.inPlace(files, fetching: files.filter { fetching.contains($0.path) }) == inPlace)
    }

    @Test(arguments: [
        ("\"resolvers\";r=0;t=1", 1.0), ("\"api\";r=0;t=42", 42.0), ("\"resolvers\";r=2;t=1", nil),
        ("\"resolvers\";r=0", nil), ("\"resolvers\"; r = 0 ; t = 3", 3.0), ("", nil), ("r=x;t=1", nil),
    ] as [(String, Double?)])
    func aRateLimitWithNothingLeftIsWaitedFor(field: String, wait: Double?) {
        #expect(HubAPI.exhaustedWindowSeconds(field) == wait)
    }

    @Test func theCacheLayoutIsHuggingfaceHubs() throws {
        let layout = HubCacheLayout(cache: "/c/", repository: try HubRepository("hf://datasets/o/n"))
        #expect(layout.blobs == "/c/datasets--o--n/blobs")
        #expect(layout.snapshot(commit: "abc", path: "x/y.txt") == "/c/datasets--o--n/snapshots/abc/x/y.txt")
        #expect(layout.reference("refs/pr/1") == "/c/datasets--o--n/refs/refs/pr/1")
        #expect(HubCacheLayout.linkTarget(path: "config.json", blobName: "b") == "../../blobs/b")
        #expect(HubCacheLayout.linkTarget(path: "a/b/c.bin", blobName: "b") == "../../../../blobs/b")
    }
}
