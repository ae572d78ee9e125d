import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `rangefetch hf://…` against our fake Hub: the Hub's cache as huggingface_hub lays it out (and
/// its own client, 2.4.0, loading it offline), the token kept from the CDN, a private repository,
/// a dataset at a branch, include and exclude, a rerun with no CDN request, and corrupted bytes
/// (exit 5, nothing in place).
@Suite(.serialized)
final class HubDownloadTests {
    let work: TemporaryDirectory
    let cache: String

    static let main = String(repeating: "1a", count: 20)
    static let dev = String(repeating: "2b", count: 20)
    static let modelFiles: [HubServer.File] = [
        .large("model.safetensors", size: 3 << 20 + 12_345),
        .large("sub/deep/adapter.bin", size: 1 << 20),
        .small("config.json", "{\"hidden_size\": 8}\n"),
        .small("README.md", "# a model\n"),
        .small("sub/tokenizer.json", "{\"vocab\": {}}\n"),
        .small("copy/config.json", "{\"hidden_size\": 8}\n"),  // the same bytes: one blob
    ]

    init() throws {
        work = try TemporaryDirectory()
        cache = work.file("hub-cache")
    }

    func server(_ arguments: [String] = []) throws -> HubServer {
        try HubServer([
            .init(id: "org/model", branches: ["main": (Self.main, Self.modelFiles)]),
            .init(id: "org/private", isPrivate: true, branches: ["main": (Self.main, [.small("secret.txt", "only with a token\n"),
                                                                                         .large("w.bin", size: 300_000)])]),
            .init(kind: "dataset", id: "org/set", branches: [
                "main": (Self.main, [.small("data/a.csv", "a,b\n1,2\n")]),
                "dev": (Self.dev, [.small("data/a.csv", "a,b\n3,4\n"), .large("data/big.parquet", size: 700_000)]),
            ]),
        ], directory: work, arguments: arguments)
    }

    func environment(_ hub: HubServer, token: String? = nil) -> [String: String] {
        // HF_HOME in the test's directory: no token file of this machine is read.
        ["HF_ENDPOINT": hub.hub, "HF_HUB_CACHE": cache, "HF_HOME": work.file("hf-home"), "HF_TOKEN": token ?? ""]
    }

    func fetch(_ url: String, _ hub: HubServer, token: String? = nil, _ extra: [String] = []) throws -> TestProcess.Result {
        try runCLI([url, "-q"] + extra, environment: environment(hub, token: token))
    }

    /// The snapshot's files, byte for byte, and how they are linked.
    func expectSnapshot(_ folder: String, commit: String, files: [HubServer.File], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let snapshot = cache + "/\(folder)/snapshots/\(commit)"
        for file in files {
            let path = snapshot + "/" + file.path
            let target = try FileManager.default.destinationOfSymbolicLink(atPath: path)
            #expect(target.hasPrefix(String(repeating: "../", count: file.path.split(separator: "/").count + 1) + "blobs/"),
                    "\(file.path) -> \(target)", sourceLocation: sourceLocation)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(Array(bytes) == HubServer.bytes(of: file), "\(file.path)", sourceLocation: sourceLocation)
        }
    }

    @Test func aModelLandsInTheHubsCacheAndItsOwnClientLoadsItOffline() throws {
        let hub = try server()
        let result = try fetch("hf://org/model", hub)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == cache + "/models--org--model/snapshots/\(Self.main)\n")
        try expectSnapshot("models--org--model", commit: Self.main, files: Self.modelFiles)
        #expect(try String(contentsOfFile: cache + "/models--org--model/refs/main", encoding: .utf8) == Self.main)
        // No unproven or partial file is left among the blobs.
        let blobs = try FileManager.default.contentsOfDirectory(atPath: cache + "/models--org--model/blobs")
        #expect(blobs.filter { !$0.hasPrefix(".") }.count == 5, "\(blobs)")
        #expect(!blobs.contains { $0.hasSuffix(".unverified") || $0.hasSuffix(".part") }, "\(blobs)")
        let log = try hub.log()
        #expect(log.contains { $0["origin"] as? String == "cdn" }, "large files come from the CDN")
        #expect(!log.contains { $0["origin"] as? String == "cdn" && $0["auth"] as? Bool == true })

        let loaded = try Self.loadOffline("org/model", kind: "model", cache: cache)
        #expect(loaded == Dictionary(uniqueKeysWithValues: Self.modelFiles.map { ($0.path, Self.sha256($0)) }))

        // A rerun of a complete repository asks the Hub's API only: nothing of the CDN or /resolve/.
        let before = try hub.log().count
        let again = try fetch("hf://org/model", hub)
        #expect(again.status == 0, "\(again.stderr)")
        let rerun = try hub.log().dropFirst(before)
        #expect(!rerun.isEmpty && rerun.allSatisfy { ($0["path"] as? String ?? "").hasPrefix("/api/") }, "\(rerun)")
    }

    @Test func aPrivateRepositoryNeedsTheTokenWhichNeverReachesTheCDN() throws {
        let hub = try server()
        let anonymous = try fetch("hf://org/private", hub)
        #expect(anonymous.status == 3, "\(anonymous.stderr)")
        #expect(anonymous.stderr.contains("hf://org/private: repository not found, or private") && anonymous.stderr.contains("HF_TOKEN"),
                "\(anonymous.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cache + "/models--org--private/snapshots"))

        let withToken = try fetch("hf://org/private", hub, token: hub.token)
        #expect(withToken.status == 0, "\(withToken.stderr)")
        try expectSnapshot("models--org--private", commit: Self.main,
                           files: [.small("secret.txt", "only with a token\n"), .large("w.bin", size: 300_000)])
        let log = try hub.log()
        #expect(log.contains { $0["origin"] as? String == "hub" && $0["auth"] as? Bool == true })
        #expect(log.contains { $0["origin"] as? String == "cdn" } && !log.contains { $0["origin"] as? String == "cdn" && $0["auth"] as? Bool == true })
        // The token is nowhere in what was said.
        #expect(!withToken.stderr.contains(hub.token) && !withToken.stdout.contains(hub.token))
    }

    @Test func aDatasetAtABranchWithIncludeAndExclude() throws {
        let hub = try server()
        let result = try fetch("hf://datasets/org/set@dev", hub, ["--include", "data/*", "--exclude", "*.csv"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectSnapshot("datasets--org--set", commit: Self.dev, files: [.large("data/big.parquet", size: 700_000)])
        #expect(!FileManager.default.fileExists(atPath: cache + "/datasets--org--set/snapshots/\(Self.dev)/data/a.csv"))
        #expect(try String(contentsOfFile: cache + "/datasets--org--set/refs/dev", encoding: .utf8) == Self.dev)
        let missing = try fetch("hf://datasets/org/set@nope", hub)
        #expect(missing.status == 3 && missing.stderr.contains("revision 'nope' not found"), "\(missing.stderr)")
    }

    /// Ctrl-C midway through a large file, then the same command: it resumes from the partial
    /// blob and its journal (the CDN serves the file about once in all), and the file is exact.
    @Test func anInterruptedRepositoryResumes() throws {
        let file = HubServer.File.large("big.bin", size: 24 << 20)
        let hub = try HubServer([.init(id: "org/big", branches: ["main": (Self.main, [file])])], directory: work,
                                arguments: ["--cdn-cap-bytes-per-sec", "\(2 << 20)"])
        let running = try RunningCLI(["hf://org/big", "-n", "4"], environment: environment(hub))
        let deadline = Date().addingTimeInterval(60)
        while try hub.log().filter({ $0["origin"] as? String == "cdn" && $0["status"] as? Int == 206 }).isEmpty {
            guard Date() < deadline else { throw TestFailure("no range came from the CDN within 60 s") }
            usleep(20_000)
        }
        running.send(SIGINT)
        let (status, _) = try running.wait()
        #expect(status != 0)
        let blobs = try FileManager.default.contentsOfDirectory(atPath: cache + "/models--org--big/blobs")
        #expect(blobs.contains { $0.hasSuffix(".part") }, "\(blobs)")
        #expect(!FileManager.default.fileExists(atPath: cache + "/models--org--big/snapshots"), "nothing linked before it is whole")
        let again = try fetch("hf://org/big", hub, ["-n", "4"])
        #expect(again.status == 0, "\(again.stderr)")
        try expectSnapshot("models--org--big", commit: Self.main, files: [file])
        let served = try hub.log().filter { $0["origin"] as? String == "cdn" }.reduce(0) { $0 + ($1["bytes"] as? Int ?? 0) }
        #expect(Double(served) <= 1.3 * Double(file.size), "the CDN served \(served) bytes for \(file.size)")
    }

    /// `--local-dir`: the files themselves, with the metadata `hf download --local-dir` keeps;
    /// huggingface_hub's own `snapshot_download(local_dir=)` then finds every file up to date and
    /// fetches nothing (no GET of a file, only its HEADs); a rerun of ours fetches nothing either.
    @Test func aLocalFolderIsOneHuggingfaceHubTakesAsUpToDate() throws {
        let hub = try server()
        let folder = work.file("local")
        let result = try fetch("hf://org/model", hub, ["--local-dir", folder])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == folder + "\n")
        for file in Self.modelFiles {
            let path = folder + "/" + file.path
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == nil, "\(file.path) is a file, not a link")
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == HubServer.bytes(of: file), "\(file.path)")
            let metadata = try String(contentsOfFile: folder + "/.cache/huggingface/download/\(file.path).metadata", encoding: .utf8)
            #expect(metadata.hasPrefix("\(Self.main)\n\(file.lfs ? Self.sha256(file) : Self.gitID(file))\n"), "\(metadata)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/.cache/huggingface/rangefetch").filter { !$0.hasPrefix(".") }.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: cache), "nothing in the cache")

        let before = try hub.log().count
        let script = """
            import sys
            from huggingface_hub import snapshot_download
            snapshot_download(sys.argv[1], local_dir=sys.argv[2])
            """
        let client = try TestProcess.run(Self.python, ["-c", script, "org/model", folder],
                                         environment: environment(hub).merging(["HF_HUB_DISABLE_TELEMETRY": "1"]) { $1 })
        #expect(client.status == 0, "\(client.stderr)")
        let asked = try hub.log().dropFirst(before)
        #expect(!asked.contains { $0["method"] as? String == "GET" && !($0["path"] as? String ?? "").hasPrefix("/api/") },
                "huggingface_hub fetched a file again: \(asked)")
        let again = try fetch("hf://org/model", hub, ["--local-dir", folder])
        #expect(again.status == 0 && again.stderr.isEmpty, "\(again.stderr)")
    }

    /// The Hub allows 3 `/resolve/` calls a second and says what is left in `RateLimit`: one
    /// process keeps under it (no 429; its 16 calls spread over 4 s and more), and two at once,
    /// which together go over it, wait out each 429 (`Retry-After: 1`). Every file is exact.
    @Test func theHubsRateLimitIsKeptAndItsRefusalsWaitedOut() throws {
        let files = (0..<32).map { HubServer.File.small("shard-\($0).json", "{\"n\": \($0)}\n") }
        let hub = try HubServer([.init(id: "org/many", branches: ["main": (Self.main, files)])], directory: work,
                                arguments: ["--rate-limit", "3"])
        func resolves(_ log: [[String: Any]]) -> [[String: Any]] { log.filter { ($0["path"] as? String ?? "").contains("/resolve/") } }

        let alone = try fetch("hf://org/many", hub, ["--include", "shard-1?.json"])
        #expect(alone.status == 0, "\(alone.stderr)")
        let first = resolves(try hub.log())
        #expect(first.count == 10 && !first.contains { $0["status"] as? Int == 429 }, "\(first)")
        let times = first.compactMap { $0["t"] as? Double }
        #expect((times.max() ?? 0) - (times.min() ?? 0) >= 2, "10 calls at 3 a second take 3 windows")

        let shards = try (0..<2).map { index in
            try RunningCLI(["hf://org/many", "--shard", "\(index)/2"], environment: environment(hub))
        }
        for shard in shards {
            let (status, stderr) = try shard.wait()
            #expect(status == 0, "\(stderr)")
        }
        try expectSnapshot("models--org--many", commit: Self.main, files: files)
        #expect(resolves(try hub.log()).contains { $0["status"] as? Int == 429 },
                "two processes never went over the limit together: the waiting was not provoked")
    }

    /// Two shards run at once into one cache (as two jobs of an array would): each takes the
    /// files whose blob hashes to it, both write the same ref, and together they leave the whole
    /// snapshot, which huggingface_hub loads offline.
    @Test func twoShardsAtOnceFillOneCache() throws {
        let hub = try server()
        let shards = try (0..<2).map { index in
            try RunningCLI(["hf://org/model", "--shard", "\(index)/2"], environment: environment(hub))
        }
        for shard in shards {
            let (status, stderr) = try shard.wait()
            #expect(status == 0, "\(stderr)")
        }
        try expectSnapshot("models--org--model", commit: Self.main, files: Self.modelFiles)
        let loaded = try Self.loadOffline("org/model", kind: "model", cache: cache)
        #expect(loaded.count == Self.modelFiles.count)
        let resolved = try hub.log().filter { ($0["path"] as? String ?? "").contains("/resolve/") && $0["method"] as? String == "GET" }
        #expect(Set(resolved.compactMap { $0["path"] as? String }).count == resolved.count, "no file was fetched by both shards")
    }

    /// Bytes that are not the listing's: exit 5 naming the file, and nothing under the blob's
    /// name or in the snapshot, for a large file (sha256, checked as it arrives) and a small one
    /// (git blob id, checked before it takes its name).
    @Test(arguments: ["model.safetensors", "config.json"])
    func corruptedBytesAreExitFiveAndNothingIsInPlace(path: String) throws {
        let hub = try server()
        try hub.control("corrupt?repo=org/model&path=\(path)")
        let result = try fetch("hf://org/model", hub, ["--max-tries", "1"])
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains(path) || result.stderr.contains(String(path.prefix(5))), "\(result.stderr)")
        let file = try #require(Self.modelFiles.first { $0.path == path })
        let blobName = file.lfs ? Self.sha256(file) : Self.gitID(file)
        #expect(!FileManager.default.fileExists(atPath: cache + "/models--org--model/blobs/\(blobName)"))
        #expect(!FileManager.default.fileExists(atPath: cache + "/models--org--model/snapshots/\(Self.main)/\(path)"))
    }

    /// The CDN's signed URLs live 2 s and each connection is capped at 1 MiB/s, so the ranges
    /// asked after the first ones (4 MiB each) find their URL expired (403): each is asked of the
    /// Hub again, whose fresh redirect goes on where the file stopped; the file is exact.
    @Test func aSignatureThatExpiresMidFileIsResolvedAgain() throws {
        let file = HubServer.File.large("big.bin", size: 24 << 20)
        let hub = try HubServer([.init(id: "org/big", branches: ["main": (Self.main, [file])])], directory: work,
                                arguments: ["--cdn-cap-bytes-per-sec", "\(1 << 20)", "--signature-ttl", "2"])
        let result = try fetch("hf://org/big", hub, ["-n", "4"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectSnapshot("models--org--big", commit: Self.main, files: [file])
        let log = try hub.log().sorted { ($0["t"] as? Double ?? 0) < ($1["t"] as? Double ?? 0) }
        let expired = try #require(log.firstIndex { $0["origin"] as? String == "cdn" && $0["status"] as? Int == 403 },
                                   "no request was refused as expired: the test proved nothing")
        let after = log[expired...]
        #expect(after.contains { $0["origin"] as? String == "hub" && ($0["path"] as? String ?? "").contains("/resolve/") })
        #expect(after.contains { $0["origin"] as? String == "cdn" && $0["status"] as? Int == 206 })
    }

    /// The Hub's CDN caps each connection: a repository's large files share 64 connections to it
    /// unless told otherwise, not a list's 16; and --max-connections-per-host holds for hf:// too
    /// (it was not passed on before, so the CDN never got more than 16).
    @Test func theCDNGetsSixtyFourConnectionsUnlessToldOtherwise() throws {
        let wide = HubServer.File.large("wide.bin", size: 32 << 20), narrow = HubServer.File.large("narrow.bin", size: 3 << 20)
        let hub = try HubServer([.init(id: "org/wide", branches: ["main": (Self.main, [wide, narrow])])], directory: work,
                                arguments: ["--cdn-cap-bytes-per-sec", "\(512 << 10)"])
        func mostConnections(_ extra: [String]) throws -> Int {
            let result = try runCLI(["hf://org/wide", "--json", "--min-segment", "256K"] + extra,
                                    environment: environment(hub))
            #expect(result.status == 0, "\(result.stderr)")
            return result.stdout.split(separator: "\n").compactMap { line -> Int? in
                guard let range = line.range(of: "\"active_connections\":") else { return nil }
                return Int(line[range.upperBound...].prefix(while: \.isNumber))
            }.max() ?? 0
        }
        let most = try mostConnections(["-n", "32", "--include", "wide.bin"])
        #expect(most > 16 && most <= 32, "the CDN got at most \(most) connections at once")
        let held = try mostConnections(["-n", "32", "--include", "narrow.bin", "--max-connections-per-host", "3"])
        #expect(held > 0 && held <= 3, "--max-connections-per-host 3 let \(held) connections run at once")
        try expectSnapshot("models--org--wide", commit: Self.main, files: [wide, narrow])
    }

    /// `--force-download` fetches every file again, even those in place, and replaces each whole.
    /// Blobs damaged in place at their right size (which a plain rerun takes as cached, as
    /// huggingface_hub does) come back exact, in the cache and in a local folder; a reader holding
    /// an old blob keeps its bytes, since the new one was renamed over it, not written into it.
    /// Given with an http URL, the flag is refused.
    @Test(arguments: [false, true])
    func forceDownloadFetchesEveryFileAgainAndReplacesEachWhole(localFolder: Bool) throws {
        let hub = try server()
        let folder = work.file("local")
        let extra = localFolder ? ["--local-dir", folder] : []
        #expect(try fetch("hf://org/model", hub, extra).status == 0)
        let large = try #require(Self.modelFiles.first { $0.path == "model.safetensors" })
        let small = try #require(Self.modelFiles.first { $0.path == "config.json" })
        let place = { (file: HubServer.File) in
            localFolder ? folder + "/" + file.path
                : self.cache + "/models--org--model/blobs/" + (file.lfs ? Self.sha256(file) : Self.gitID(file))
        }
        let damage = Array(repeating: UInt8(0x5a), count: 16)
        for file in [large, small] {
            let handle = try #require(FileHandle(forWritingAtPath: place(file)))
            try handle.write(contentsOf: damage.prefix(min(16, file.size)))
            try handle.close()
        }
        let held = try #require(FileHandle(forReadingAtPath: place(large)))
        defer { try? held.close() }

        let before = try hub.log().count
        let result = try fetch("hf://org/model", hub, extra + ["--force-download"])
        #expect(result.status == 0, "\(result.stderr)")
        let asked = try hub.log().dropFirst(before)
        for file in [large, small] {
            #expect(asked.contains { ($0["path"] as? String ?? "").hasSuffix("/resolve/\(Self.main)/\(file.path)") },
                    "\(file.path) was not fetched again: \(asked.map { $0["path"] ?? "" })")
        }
        #expect(asked.contains { $0["origin"] as? String == "cdn" }, "the large files were not fetched again")
        if localFolder {
            for file in Self.modelFiles {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + file.path))
                #expect(Array(bytes) == HubServer.bytes(of: file), "\(file.path)")
            }
        } else {
            try expectSnapshot("models--org--model", commit: Self.main, files: Self.modelFiles)
        }
        #expect(try held.read(upToCount: 16).map(Array.init) == damage, "the old blob was written into, not replaced")

        let refused = try runCLI(["http://127.0.0.1:9/x.bin", "--force-download"])
        #expect(refused.status == 2 && refused.stderr.contains("hf://"), "\(refused.stderr)")
    }

    // MARK: Helpers

    static func sha256(_ file: HubServer.File) -> String {
        let digest = Digest(.sha256)
        digest.update(HubServer.bytes(of: file))
        return digest.finalize().hex
    }

    static func gitID(_ file: HubServer.File) -> String {
        let bytes = HubServer.bytes(of: file)
        let digest = Digest(.sha1)
        digest.update(Array("blob \(bytes.count)\0".utf8) + bytes)
        return digest.finalize().hex
    }

    static let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".venv/bin/python").path

    /// huggingface_hub's own `snapshot_download(local_files_only=True)` with `HF_HUB_OFFLINE=1`:
    /// every file it finds, path to sha256.
    static func loadOffline(_ id: String, kind: String, cache: String) throws -> [String: String] {
        let script = """
            import hashlib, json, os, sys
            from huggingface_hub import snapshot_download
            folder = snapshot_download(sys.argv[1], repo_type=sys.argv[2], local_files_only=True)
            out = {}
            for root, _, names in os.walk(folder):
                for name in names:
                    path = os.path.join(root, name)
                    out[os.path.relpath(path, folder)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
            print(json.dumps(out))
            """
        let result = try TestProcess.run(python, ["-c", script, id, kind],
                                         environment: ["HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": cache, "HF_HUB_DISABLE_TELEMETRY": "1"])
        guard result.status == 0 else { throw TestFailure("huggingface_hub could not load \(id) offline: \(result.stderr)") }
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String] ?? [:]
    }
}
