import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The batch list (`-i`): aria2c's format, JSON lines, and errors that name the line.
struct ManifestTests {
    static let sha = String(repeating: "ab", count: 32)

    @Test func readsAria2FormatWithOptionsCommentsAndCRLF() throws {
        let text = """
        # models\r
        https://h.example/a.bin\r
          out=weights/a.bin\r
        \tdir=data\r
          checksum=sha-256=\(Self.sha)\r
          header=Authorization: Bearer x\r
          header=X-Two: 2\r
        \r
        http://h.example/b.bin
        """
        let entries = try Manifest.parse(text, source: "list.txt")
        #expect(entries.count == 2)
        #expect(entries[0].url == "https://h.example/a.bin")
        #expect(entries[0].output == "weights/a.bin")
        #expect(entries[0].directory == "data")
        #expect(entries[0].checksums.map(\.hex) == [Self.sha])
        #expect(entries[0].headers == ["Authorization: Bearer x", "X-Two: 2"])
        #expect(entries[0].origin == "list.txt:2")
        #expect(entries[1] == BatchEntry(url: "http://h.example/b.bin", origin: "list.txt:9"))
        #expect(entries[0].expectedPath(defaultDirectory: "/srv") == "/srv/data/weights/a.bin")
        #expect(entries[1].expectedPath(defaultDirectory: "out/") == "out/b.bin")
    }

    @Test func readsJSONLinesMixedWithPlainLines() throws {
        let text = """
        {"url": "http://h.example/x", "out": "x.bin", "sha256": "\(Self.sha)", "headers": ["A: 1"], "size": 12}
        http://h.example/y
        {"url":"http://h.example/z","dir":"d","checksum":"md5=\(String(repeating: "0", count: 32))","header":"B: 2"}
        """
        let entries = try Manifest.parse(text, source: "l.jsonl")
        #expect(entries.map(\.url) == ["http://h.example/x", "http://h.example/y", "http://h.example/z"])
        #expect(entries[0].output == "x.bin")
        #expect(entries[0].checksums.first?.algorithm == .sha256)
        #expect(entries[0].headers == ["A: 1"])
        #expect(entries[2].directory == "d")
        #expect(entries[2].checksums.first?.algorithm == .md5)
        #expect(entries[2].headers == ["B: 2"])
    }

    static let malformed: [(text: String, line: Int, says: String)] = [
        ("  out=a.bin\nhttp://h/a", 1, "must follow a URL"),
        ("http://h/a\n  split=4", 2, "unknown option 'split'"),
        ("http://h/a\n\n  checksum=sha256=zz", 3, "64 hex digits"),
        ("http://h/a\nftp://h/b", 2, "unsupported scheme"),
        ("# c\nnot a url", 2, "not a URL"),
        ("http://h/a\tftp://m/a", 1, "unsupported scheme"),
        ("http://h/a\n  out=../../etc/passwd", 2, "without '..'"),
        ("http://h/a\n  out=/abs", 2, "relative"),
        ("http://h/a\n  dir=/data", 2, "dir= must be a directory inside the batch's directory"),
        ("http://h/a\n\n  dir=../up", 3, "without '..'"),
        ("http://h/a\n  dir=a/../../up", 2, "without '..'"),
        ("http://h/a\n  dir=", 2, "dir= needs a directory"),
        ("{\"url\": \"http://h/a\", \"dir\": \"/etc\"}", 1, "\"dir\" must be a directory inside"),
        ("{\"url\": \"http://h/a\", \"dir\": \"x/..\"}", 1, "without '..'"),
        ("http://h/a\n  header=NoColon", 2, "Name: value"),
        ("http://h/a\n  header=Authorization Bearer s3cr3t", 2, "'Authorization …'"),
        ("{\"url\": 5}", 1, "JSON object"),
        ("{\"out\": \"a\"}", 1, "JSON object"),
        ("{\"url\": \"http://h/a\"", 1, "JSON object"),
        ("http://h/a\n  out", 2, "NAME=VALUE"),
        ("http://h/a\ns3://models/data/", 2, "s3://models/data/ names a prefix, not an object: fetch a prefix as its own batch"),
        ("s3://models", 1, "names a prefix"),
        ("{\"url\": \"s3://models/\"}", 1, "names a prefix"),
        ("s3:///key.bin", 1, "no bucket"),
        ("http://h/a\ts3://models/a", 1, "a mirror must be an http:// or https:// URL"),
    ]

    @Test(arguments: malformed)
    func malformedLineIsAUsageErrorNamingFileAndLine(_ example: (text: String, line: Int, says: String)) {
        #expect {
            _ = try Manifest.parse(example.text, source: "m.txt")
        } throws: { error in
            guard let error = error as? DownloadError else { return false }
            return error.category == .usage && error.message.hasPrefix("m.txt:\(example.line): ")
                && error.message.contains(example.says)
        }
    }

    /// An `s3://BUCKET/KEY` line is one object, saved under its key's last segment; its mirrors
    /// are http(s). A prefix line is refused with the advice to fetch it as a batch of its own.
    @Test func s3ObjectLinesAreEntriesAndPrefixLinesAreRefused() throws {
        let entries = try Manifest.parse("s3://models/llm/w.bin\thttp://m/w.bin\n{\"url\": \"s3://models/x/y.bin\"}\nhttp://h/z\n",
                                         source: "l")
        #expect(entries.map(\.url) == ["s3://models/llm/w.bin", "s3://models/x/y.bin", "http://h/z"])
        #expect(entries[0].mirrors == ["http://m/w.bin"])
        #expect(entries.map { $0.expectedPath(defaultDirectory: "d") } == ["d/w.bin", "d/y.bin", "d/z"])
        #expect {
            _ = try Manifest.parse("s3://models/data/", source: "l")
        } throws: { error in
            (error as? DownloadError)?.remedy == .fetchPrefixAsBatch
        }
    }

    @Test func emptyListHasNoEntries() throws {
        #expect(try Manifest.parse("# nothing\n\n   \n", source: "e").isEmpty)
    }

    @Test func twoEntriesForOnePathAreAnErrorNamingBoth() throws {
        let entries = try Manifest.parse("http://h/a/x.bin\nhttp://h/b/x.bin\n", source: "d.txt")
        #expect {
            try Manifest.checkDistinctPaths(entries, defaultDirectory: "out")
        } throws: { error in
            let message = (error as? DownloadError)?.message ?? ""
            return message.contains("d.txt:1") && message.contains("d.txt:2") && message.contains("out/x.bin")
        }
        let renamed = try Manifest.parse("http://h/a/x.bin\nhttp://h/b/x.bin\n  out=y.bin\n", source: "d.txt")
        try Manifest.checkDistinctPaths(renamed, defaultDirectory: "out")
        let elsewhere = try Manifest.parse("http://h/a/x.bin\nhttp://h/b/x.bin\n  dir=other\n", source: "d.txt")
        try Manifest.checkDistinctPaths(elsewhere, defaultDirectory: "out")
    }
}

/// `--shard K/N`: every URL in exactly one shard, independent of order, matching the documented hash.
struct ShardSelectorTests {
    @Test func shardsPartitionTheListWhateverItsOrder() throws {
        let urls = (0..<1000).map { "https://cdn.example/data/part-\($0).parquet" }
        let count = 4
        let selectors = try (0..<count).map { try ShardSelector(index: $0, count: count) }
        var sizes = [Int](repeating: 0, count: count)
        for url in urls {
            let owners = selectors.filter { $0.includes(url) }
            #expect(owners.count == 1)
            sizes[owners[0].index] += 1
        }
        // SHA-256 spreads evenly: each shard gets its quarter give or take.
        #expect(sizes.allSatisfy { (200...300).contains($0) })
        #expect(urls.reversed().map { ShardSelector.shard(of: $0, count: count) }
                == urls.map { ShardSelector.shard(of: $0, count: count) }.reversed())
    }

    @Test func hashIsTheDocumentedOne() throws {
        // python3 -c 'import hashlib; u=b"http://example.com/a"; print(int.from_bytes(hashlib.sha256(u).digest()[:8], "big") % 7)'
        let script = "import hashlib,sys\nfor u in sys.argv[1:]: print(int.from_bytes(hashlib.sha256(u.encode()).digest()[:8], 'big') % 7)"
        let urls = ["http://example.com/a", "https://h/ünïcode", "http://127.0.0.1:8080/x?y=1"]
        let result = try TestProcess.run("/usr/bin/python3", ["-c", script] + urls)
        #expect(result.status == 0)
        #expect(result.stdout.split(separator: "\n").map(String.init) == urls.map { String(ShardSelector.shard(of: $0, count: 7)) })
    }

    @Test(arguments: ["1", "1/", "/2", "a/b", "2/2", "-1/2", "0/0", "1/2/3"])
    func badShardIsAUsageError(_ text: String) {
        #expect(throws: DownloadError.self) { try ShardSelector(parsing: text) }
    }

    @Test func parsesKOfN() throws {
        #expect(try ShardSelector(parsing: "3/8") == ShardSelector(index: 3, count: 8))
    }
}

/// The batch's shared connections.
struct ConnectionBudgetTests {
    @Test func neverMoreThanTotalOrPerHost() {
        let budget = ConnectionBudget(total: 5, perHost: 3)
        #expect((0..<4).map { _ in budget.acquire(host: "a", priority: 0) } == [true, true, true, false])
        #expect(budget.acquire(host: "b", priority: 1))
        #expect(budget.acquire(host: "b", priority: 1))
        #expect(!budget.acquire(host: "c", priority: 2))
        #expect(budget.inUse == 5)
        budget.release(host: "a")
        #expect(budget.acquire(host: "c", priority: 2))
        #expect(!budget.acquire(host: "a", priority: 0))
    }

    @Test func earlierFilesThatWantMoreGoFirst() {
        let budget = ConnectionBudget(total: 4, perHost: 4)
        for _ in 0..<4 { #expect(budget.acquire(host: "h", priority: 0)) }
        // File 0 wants two more; file 1 has none yet.
        budget.setWaiting(priority: 0, host: "h", count: 2)
        budget.release(host: "h")
        budget.release(host: "h")
        #expect(!budget.acquire(host: "h", priority: 1))
        #expect(budget.acquire(host: "h", priority: 0))
        budget.setWaiting(priority: 0, host: "h", count: 1)
        #expect(!budget.acquire(host: "h", priority: 1))
        // File 0 is content: the free connection goes to file 1.
        budget.setWaiting(priority: 0, host: "h", count: 0)
        #expect(budget.acquire(host: "h", priority: 1))
    }

    @Test func aWaitingFileOnAnotherHostDoesNotHoldBackThisHostsShare() {
        let budget = ConnectionBudget(total: 10, perHost: 2)
        budget.setWaiting(priority: 0, host: "slow.example", count: 3)
        // 10 free in total, 3 wanted ahead: file 1 on another host still gets its per-host 2.
        #expect(budget.acquire(host: "fast.example", priority: 1))
        #expect(budget.acquire(host: "fast.example", priority: 1))
        #expect(!budget.acquire(host: "fast.example", priority: 1))
    }

    @Test func tabSeparatedURLsAreMirrorsOfOneFile() throws {
        let entries = try Manifest.parse("http://h/a.bin\thttp://m1/a.bin\t http://m2:8080/a.bin\n  out=x.bin\nhttp://h/b\n", source: "l")
        #expect(entries.count == 2)
        #expect(entries[0].url == "http://h/a.bin" && entries[0].mirrors == ["http://m1/a.bin", "http://m2:8080/a.bin"])
        #expect(entries[0].output == "x.bin" && entries[1].mirrors.isEmpty)
    }
}
