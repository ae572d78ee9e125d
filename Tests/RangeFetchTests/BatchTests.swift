import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Many files in one run (`-i`, several URLs): real nginx for the good files, our fault server
/// for the bad ones.
@Suite(.serialized)
final class BatchTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer
    let lists: TemporaryDirectory

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
        lists = try TemporaryDirectory("rf-lists")
    }

    /// Writes `lines` as the list `name` and returns its path.
    func list(_ name: String, _ lines: [String]) throws -> String {
        let path = lists.file(name)
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func sameBytes(_ downloaded: String, _ source: String) throws -> Bool {
        guard FileManager.default.fileExists(atPath: downloaded) else { return false }
        return try Checksums.sha256sum(downloaded) == Checksums.sha256sum(source)
    }

    /// The S3 configuration is read once per batch, and only for its `s3://` URLs: without
    /// credentials, an `s3://` URL on the command line stops the batch before any file (a usage
    /// error saying what is missing), while in a list it fails alone and the http lines are fetched.
    @Test func s3CredentialsAreReadOncePerBatchAndOnlyForS3URLs() throws {
        let file = try www.randomFile("plain.bin", size: 100_000)
        let home = try TemporaryDirectory("rf-home")
        let environment = ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "", "AWS_ENDPOINT_URL": "",
                           "HOME": home.path]
        let given = try runCLI(["--no-config", "-d", out.path, nginx.baseURL + "/plain.bin", "s3://bucket/k.bin"],
                               environment: environment, timeoutSeconds: 30)
        #expect(given.status == 2, "\(given.stderr)")
        #expect(given.stderr.contains("s3:// URLs need credentials"), "\(given.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.file("plain.bin")))
        let list = out.file("list.txt")
        try "\(nginx.baseURL)/plain.bin\ns3://bucket/a.bin\ns3://bucket/b.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let listed = try runCLI(["--no-config", "-i", list, "-d", out.path, "-j", "1"], environment: environment, timeoutSeconds: 30)
        #expect(listed.status != 0, "\(listed.stderr)")
        #expect(try Checksums.sha256sum(out.file("plain.bin")) == Checksums.sha256sum(file))
        // Both s3:// lines fail with the one reading's error.
        #expect(listed.stderr.components(separatedBy: "s3:// URLs need credentials").count - 1 == 2, "\(listed.stderr)")
    }

    /// The netrc file is read once for the batch, not once per file: a login in it reaches every
    /// file's request, and a file others may write stops the batch before any request, naming it.
    @Test func theNetrcFileIsReadOncePerBatch() throws {
        _ = try (1...3).map { try www.randomFile("n\($0).bin", size: 1000) }
        let logging = try NginxServer(docroot: www.path, loggedHeader: "Authorization")
        defer { logging.stop() }
        let home = try TemporaryDirectory("rf-home")
        let netrc = home.file(".netrc")
        try "machine 127.0.0.1 login alice password s3cret\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o600)
        let lines = (1...3).map { "\(logging.baseURL)/n\($0).bin" }
        let good = try runCLI(["--no-config", "-i", try list("netrc.txt", lines), "-d", out.path, "-j", "2"],
                              environment: ["HOME": home.path], timeoutSeconds: 30)
        #expect(good.status == 0, "\(good.stderr)")
        // Basic alice:s3cret on every file's request.
        let logged = logging.headerLog()
        #expect((1...3).allSatisfy { number in logged.contains { $0.path == "/n\(number).bin" && $0.value == "Basic YWxpY2U6czNjcmV0" } },
                "\(logged)")
        chmod(netrc, 0o666)
        let again = out.path + "/again"
        let refused = try runCLI(["--no-config", "-i", try list("netrc2.txt", lines), "-d", again],
                                 environment: ["HOME": home.path], timeoutSeconds: 30)
        #expect(refused.status != 0 && refused.stderr.contains("\(netrc) is writable by every user"), "\(refused.stderr)")
        #expect(refused.stderr.components(separatedBy: "writable by every user").count == 2, "said once: \(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: again), "nothing made before the netrc file is read")
    }

    @Test func mixedListSavesEveryGoodFileExactlyAndNamesTheBadOnes() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        let tiny = try www.randomFile("tiny.bin", size: 1)
        let empty = try www.randomFile("empty.bin", size: 0)
        let large = try www.randomFile("large.bin", size: 40 << 20)
        let smalls = try (1...5).map { try www.randomFile("s\($0).bin", size: 64 << 10) }
        let sha = try Checksums.sha256sum(large)
        let path = try list("mixed.txt", [
            "# a mixed batch",
            "\(nginx.baseURL)/tiny.bin",
            "\(nginx.baseURL)/empty.bin",
            "\(nginx.baseURL)/large.bin",
            "  out=big/large-renamed.bin",
            "  checksum=sha-256=\(sha)",
            "\(nginx.baseURL)/missing.bin",
            fault.dataURL(size: 5 << 20, name: "drops.bin", "cut=1000000&cutcount=2"),
            fault.dataURL(size: 3 << 20, name: "broken.bin", "cut=0"),
        ] + (1...5).map { "\(nginx.baseURL)/s\($0).bin" })
        let result = try runCLI(["-i", path, "-d", out.path, "-j", "4", "--max-tries", "2", "--retry-wait", "0"])
        #expect(result.status == 3, "\(result.stderr)")
        #expect(try sameBytes(out.file("tiny.bin"), tiny))
        #expect(try sameBytes(out.file("empty.bin"), empty))
        #expect(try sameBytes(out.file("big/large-renamed.bin"), large))
        for (index, small) in smalls.enumerated() { #expect(try sameBytes(out.file("s\(index + 1).bin"), small)) }
        let drops = try Data(contentsOf: URL(fileURLWithPath: out.file("drops.bin")))
        #expect(drops == (try fault.expectedBytes(size: 5 << 20)))
        // The bad ones: one line each naming the list line, and nothing at their final paths.
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("rangefetch: error:") }
        #expect(errors.count == 2, "\(result.stderr)")
        #expect(errors.contains { $0.contains("mixed.txt:7") && $0.contains("404") })
        #expect(errors.contains { $0.contains("mixed.txt:9") && $0.contains("broken.bin") })
        #expect(!out.exists("missing.bin") && !out.exists("broken.bin"))
        // The table lists every file.
        #expect(result.stdout.contains("11 files: 9 downloaded, 2 failed"), "\(result.stdout)")
    }

    /// A list from a pipe (`-i <(…)`) is read like a file.
    @Test func aListFromAPipeIsRead() throws {
        let source = try www.randomFile("piped.bin", size: 70_000)
        let result = try TestProcess.run("/bin/bash", ["-c", "\"$RF\" -i <(printf '\(nginx.baseURL)/piped.bin\\n') -d '\(out.path)'"],
                                         environment: ["RF": try TestProcess.rangefetchBinary])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try sameBytes(out.file("piped.bin"), source))
    }

    @Test func quietBatchPrintsOnlyItsErrors() throws {
        let good = try www.randomFile("q.bin", size: 64 << 10)
        let path = try list("quiet.txt", ["\(nginx.baseURL)/q.bin", "\(nginx.baseURL)/gone.bin"])
        let result = try runCLI(["-q", "-i", path, "-d", out.path])
        #expect(result.status == 3, "\(result.stderr)")
        #expect(try sameBytes(out.file("q.bin"), good))
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("quiet.txt:2") && lines[0].contains("404"), "\(result.stderr)")
    }

    @Test func killedBatchResumesWithoutFetchingFinishedFilesAgain() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        let smalls = try (1...3).map { try www.randomFile("k\($0).bin", size: 200 << 10) }
        let bigSize: Int64 = 24 << 20
        let bigURL = fault.dataURL(size: bigSize, name: "big.bin", "rate=\(2 << 20)")
        let path = try list("kill.txt", (1...3).map { "\(nginx.baseURL)/k\($0).bin" } + [bigURL])
        let arguments = ["-i", path, "-d", out.path, "-j", "1", "-n", "4"]
        let run = try RunningCLI(arguments)
        #expect(run.waitUntilReceived(6 << 20), "the big file never got going")
        run.send(SIGKILL)
        _ = try run.wait()
        for index in 1...3 { #expect(out.exists("k\(index).bin")) }
        #expect(out.exists("big.bin.part.rfjournal"))

        let result = try runCLI(["--json"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        for (index, small) in smalls.enumerated() { #expect(try sameBytes(out.file("k\(index + 1).bin"), small)) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: out.file("big.bin"))) == (try fault.expectedBytes(size: bigSize)))
        // Finished files were only asked about (HEAD), never fetched again.
        for index in 1...3 {
            let gets = nginx.accessLog().filter { $0.path == "/k\(index).bin" && $0.method == "GET" }
            #expect(gets.count == 1, "k\(index).bin fetched \(gets.count) times")
        }
        // The big one continued from what its journal holds.
        let start = result.stdout.split(separator: "\n").first { $0.contains("\"event\":\"start\"") && $0.contains("big.bin") }
        let resumed = start.flatMap { $0.firstRange(of: "\"resumed_bytes\":") }
            .flatMap { Int64(start![$0.upperBound...].prefix(while: \.isNumber)) } ?? 0
        #expect(resumed >= 4 << 20, "resumed only \(resumed) bytes: \(start ?? "no start event")")
    }

    @Test func shardsTogetherFetchEveryFileExactlyOnce() throws {
        let names = (1...24).map { "shard-\($0).bin" }
        let sources = try names.map { try www.randomFile($0, size: 32 << 10) }
        let path = try list("all.txt", names.map { "\(nginx.baseURL)/\($0)" })
        let shards = 3
        let runs = try (0..<shards).map { try RunningCLI(["-i", path, "-d", out.path, "--shard", "\($0)/\(shards)"]) }
        var listed = 0
        for run in runs {
            let (status, stderr) = try run.wait()
            #expect(status == 0, "\(stderr)")
            listed += run.outputLines.filter { $0.contains("\"event\":\"finish\"") }.count
        }
        #expect(listed == names.count)
        for (name, source) in zip(names, sources) { #expect(try sameBytes(out.file(name), source)) }
        let gets = nginx.accessLog().filter { $0.method == "GET" }
        #expect(gets.count == names.count)
        #expect(Set(gets.map(\.path)) == Set(names.map { "/" + $0 }))
    }

    static let badLists: [(lines: [String], says: String)] = [
        (["http://127.0.0.1:1/a.bin", "  out=a.bin", "  checksum=sha256=123"], "bad.txt:3:"),
        // (Two entries saved at one path are found when the second is reached: StreamedListTests.)
        (["   ", "# only comments"], "lists no URLs"),
    ]

    @Test(arguments: badLists)
    func malformedListIsAUsageErrorBeforeAnyRequest(_ example: (lines: [String], says: String)) throws {
        // Every URL points at this nginx, so a request would show in its log.
        let lines = example.lines.map { $0.replacingOccurrences(of: "http://127.0.0.1:1", with: nginx.baseURL) }
        let path = try list("bad.txt", lines)
        let result = try runCLI(["-i", path, "-d", out.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(example.says), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(nginx.accessLog().isEmpty)
    }

    @Test func twoFilesTheServerNamesAlikeDoNotOverwriteEachOther() throws {
        // Different URLs (so the list check passes), one name from Content-Disposition (-J).
        let fault = try FaultServer()
        defer { fault.stop() }
        let first = fault.dataURL(size: 1000, name: "a.bin", "disposition=same.bin")
        let second = fault.dataURL(size: 3000, name: "b.bin", "disposition=same.bin")
        let path = try list("alike.txt", [first, second])
        let result = try runCLI(["-i", path, "-d", out.path, "-j", "1", "-J"])
        #expect(result.status == 2, "\(result.stderr)")
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("rangefetch: error:") }
        #expect(errors.count == 1)
        #expect(errors.first.map { $0.contains("alike.txt:2") && $0.contains("same.bin") && $0.contains("entry 1") } == true,
                "\(result.stderr)")
        // The first file is intact; the second left nothing behind.
        #expect(try Data(contentsOf: URL(fileURLWithPath: out.file("same.bin"))) == (try fault.expectedBytes(size: 1000)))
        #expect(!out.exists("same.bin.part"))
    }

    @Test func unreadableListOrChecksumFileIsAUsageErrorBeforeAnyRequest() throws {
        let good = try list("good.txt", ["\(nginx.baseURL)/a.bin", "\(nginx.baseURL)/b.bin"])
        for (arguments, says) in [(["-i", lists.file("missing.txt")], "cannot read the list"),
                                  (["-i", good, "--checksum-file", lists.file("missing.sums")], "cannot read checksum file")] {
            let result = try runCLI(arguments + ["-d", out.path])
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(result.stderr)")
        }
        #expect(nginx.accessLog().isEmpty)
    }

    @Test func batchOptionsThatNameOneFileAreRefused() throws {
        for extra in [["-o", "x.bin"], ["--checksum", "sha256=" + String(repeating: "0", count: 64)], ["--print-digest", "sha256"]] {
            let result = try runCLI(["\(nginx.baseURL)/a", "\(nginx.baseURL)/b"] + extra)
            #expect(result.status == 2, "\(extra): \(result.stderr)")
        }
    }

    @Test func smallFilesReuseAFewConnectionsAndKeepNoJournal() throws {
        let count = 120
        for index in 0..<count { try www.randomFile("c\(index).bin", size: 16 << 10) }
        let path = try list("many.txt", (0..<count).map { "\(nginx.baseURL)/c\($0).bin" })
        let result = try runCLI(["-i", path, "-d", out.path, "-j", "4", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        // Only the files and the batch journal (no per-file journal, no .part).
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0 != ".rangefetch-batch" }.count == count)
        let log = nginx.accessLog()
        #expect(log.filter { $0.method == "GET" }.count == count)
        // 4 workers, each keeping its connection from file to file (probe and range included).
        let connections = Set(log.map(\.connection))
        #expect(connections.count <= 8, "\(connections.count) connections for \(count) files")
        // JSON events carry the file's index, URL and path.
        let finishes = result.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"finish\"") }
        #expect(finishes.count == count)
        #expect(finishes.allSatisfy { $0.contains("\"index\":") && $0.contains("\"url\":\"http") && $0.contains("\"path\":") })
        #expect(result.stdout.contains("\"event\":\"batch_finish\""))
        try SchemaValidation.expectValid(result.stdout)
    }

    @Test func failFastStopsTheRestAndTheyStayUnstarted() throws {
        for index in 1...3 { try www.randomFile("ff\(index).bin", size: 4096) }
        let path = try list("ff.txt", ["\(nginx.baseURL)/nope.bin"] + (1...3).map { "\(nginx.baseURL)/ff\($0).bin" })
        let result = try runCLI(["-i", path, "-d", out.path, "-j", "1", "--fail-fast"])
        #expect(result.status == 3, "\(result.stderr)")
        // The list is streamed: lines after the stop are never read, so the table has the one file.
        #expect(result.stdout.contains("1 files: 0 downloaded, 1 failed"), "\(result.stdout)")
        for index in 1...3 { #expect(!out.exists("ff\(index).bin")) }
        #expect(nginx.accessLog().allSatisfy { $0.path == "/nope.bin" })
        // The same as JSON: the failure and the batch's end, valid against the schema.
        let json = try runCLI(["-i", path, "-d", out.path, "-j", "1", "--fail-fast", "--json"])
        #expect(json.status == 3)
        #expect(json.stdout.contains("\"event\":\"file_failed\"") && json.stdout.contains("\"failed\":1"), "\(json.stdout)")
        try SchemaValidation.expectValid(json.stdout)
    }

    @Test func libraryStreamsOneSequenceOfEventsForTheBatch() async throws {
        let sources = try (1...3).map { try www.randomFile("lib\($0).bin", size: Int64($0) << 20) }
        let entries = (1...3).map { BatchEntry(url: "\(nginx.baseURL)/lib\($0).bin", output: "copy\($0).bin") }
        var batch = BatchOptions()
        batch.directory = out.path
        batch.jobs = 2
        var sawStart = false
        var finishedFiles = Set<Int>()
        var summary: BatchSummary?
        for try await event in Downloader().events(forBatch: entries, options: batch) {
            switch event {
            case .started(let start): sawStart = start.files == 3 && finishedFiles.isEmpty
            case .file(let index, .finished): finishedFiles.insert(index)
            case .finished(let done): summary = done
            default: break
            }
        }
        #expect(sawStart)
        #expect(finishedFiles == [0, 1, 2])
        #expect(summary?.succeeded == true)
        #expect(summary?.files.map(\.status) == [.downloaded, .downloaded, .downloaded])
        for (index, source) in sources.enumerated() { #expect(try sameBytes(out.file("copy\(index + 1).bin"), source)) }
    }
}

/// The batch's connection limits count open TCP connections, counted by the server: idle
/// connections kept from file to file included.
@Suite(.serialized)
final class BatchConnectionLimitTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-batch-limit")
    }

    deinit { server.stop() }

    @Test(arguments: [(4, 6), (2, 3)])
    func aHostNeverSeesMoreOpenConnectionsThanItsLimit(jobs: Int, perHost: Int) throws {
        let size: Int64 = 6 << 20
        let lines = (0..<10).map { server.dataURL(size: size, name: "f\($0).bin", "rate=12000000") + "\n  out=f\($0).bin" }
        let path = out.file("list.txt")
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCLI(["-i", path, "-d", out.file("files"), "-j", "\(jobs)", "--max-connections-per-host", "\(perHost)",
                                 "--min-segment", "256K", "-q"])
        #expect(result.status == 0, "\(result.stderr)")
        for index in 0..<10 {
            try server.expectFile(out.file("files/f\(index).bin"), size: size, sourceLocation: #_sourceLocation)
        }
        // The stats request's own connection is one of those counted.
        let peak = try server.stats().peak_connections
        #expect(peak <= perHost + 1, "\(peak) TCP connections open at once with a limit of \(perHost)")
    }

    /// `-j` counts files started, not entries made ready ahead: while two larger files fill
    /// `-j 2`, the small files after them wait, though the lane has them ready to go.
    @Test func smallFilesMadeReadyAheadWaitForRoomInTheJobs() throws {
        let large: Int64 = 3 << 20
        let names = ["big0.bin", "big1.bin", "s0.bin", "s1.bin", "s2.bin", "s3.bin"]
        let lines = names.map { name in
            server.dataURL(size: name.hasPrefix("big") ? large : 4096, name: name, name.hasPrefix("big") ? "rate=3000000" : "")
                + "\n  out=\(name)"
        }
        let path = out.file("jobs.txt")
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        // One request a file: a range cut short is logged only when the server notices, late.
        let result = try runCLI(["-i", path, "-d", out.file("files"), "-j", "2", "-n", "1", "-q"])
        #expect(result.status == 0, "\(result.stderr)")
        for name in names {
            try server.expectFile(out.file("files/\(name)"), size: name.hasPrefix("big") ? large : 4096, sourceLocation: #_sourceLocation)
        }
        // The log is in the order responses ended: the first small file's comes after every
        // request of one of the larger files (that file ended, and made room for it).
        let log = try server.stats().log.map(\.path)
        let firstSmall = try #require(log.firstIndex { $0.hasSuffix("/s0.bin") || $0.hasSuffix("/s1.bin") || $0.hasSuffix("/s2.bin") || $0.hasSuffix("/s3.bin") })
        let endedBefore = ["big0.bin", "big1.bin"].filter { big in !log[firstSmall...].contains { $0.hasSuffix("/" + big) } }
        #expect(!endedBefore.isEmpty, "a small file was fetched while both larger ones were under way: \(log)")
    }

    /// The lane probes both files on the two connections the budget has, and keeps them open
    /// after; both files go on to the workers (one is larger than a probe keeps, the other's
    /// probe was refused once), and `-j 2` then gives the lane nothing to do. The worker probing
    /// again waits for a connection: the lane closes its idle ones and gives their places back
    /// (it held them until the batch ended, which never came).
    @Test func theLanesIdleConnectionsServeAWaitingWorker() throws {
        let large: Int64 = 4 << 20
        let lines = [server.dataURL(size: large, name: "big.bin") + "\n  out=big.bin",
                     server.dataURL(size: 4096, name: "refused.bin", "status503=1&retryafter=0") + "\n  out=refused.bin"]
        let path = out.file("starved.txt")
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCLI(["-i", path, "-d", out.file("files"), "-j", "2", "--max-connections", "2", "-q"],
                                timeoutSeconds: 60)
        #expect(result.status == 0, "\(result.stderr)")
        try server.expectFile(out.file("files/big.bin"), size: large, sourceLocation: #_sourceLocation)
        try server.expectFile(out.file("files/refused.bin"), size: 4096, sourceLocation: #_sourceLocation)
        let peak = try server.stats().peak_connections
        #expect(peak <= 2 + 1, "\(peak) TCP connections open at once with a limit of 2")
    }

    /// Two hosts in one list (the server as 127.0.0.1, then as localhost): the first host's idle
    /// connections fill the budget, and the lane's next file, on the other host, waited for a
    /// place forever. The lane closes them when it has no request in flight.
    @Test func theLanesNextHostGetsThePlacesOfItsIdleConnections() throws {
        let names = ["a0.bin", "a1.bin", "b0.bin", "b1.bin"]
        let lines = names.map { name in
            let url = server.dataURL(size: 4096, name: name)
            return (name.hasPrefix("b") ? url.replacingOccurrences(of: "127.0.0.1", with: "localhost") : url) + "\n  out=\(name)"
        }
        let path = out.file("hosts.txt")
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCLI(["-i", path, "-d", out.file("files"), "-j", "2", "--max-connections", "2", "-q"],
                                timeoutSeconds: 60)
        #expect(result.status == 0, "\(result.stderr)")
        for name in names {
            try server.expectFile(out.file("files/\(name)"), size: 4096, sourceLocation: #_sourceLocation)
        }
    }
}

/// A batch stopped with Ctrl-C tells what it saved, and `-v` works in a batch.
@Suite(.serialized)
final class BatchInterruptTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-batch-int")
    }

    deinit { server.stop() }

    @Test func interruptedFilesReportTheBytesTheyHold() throws {
        let lines = (0..<3).map { server.dataURL(size: 32 << 20, name: "i\($0).bin", "rate=4000000") + "\n  out=i\($0).bin" }
        try lines.joined(separator: "\n").write(toFile: out.file("list.txt"), atomically: true, encoding: .utf8)
        let run = try RunningCLI(["-i", out.file("list.txt"), "-d", out.file("files"), "-j", "2"])
        #expect(run.waitUntilReceived(4 << 20))
        run.send(SIGINT)
        let (status, stderr) = try run.wait()
        #expect(status == 130, "\(stderr)")
        let finish = run.outputLines.first { $0.contains("\"event\":\"batch_finish\"") } ?? ""
        // The batch's own total comes first; it counts what the interrupted files received.
        let total = finish.components(separatedBy: "\"transferred_bytes\":").dropFirst().first?.prefix { $0.isNumber }
        #expect((total.flatMap { Int64($0) } ?? 0) > 0, "\(finish.prefix(300))")
        #expect(finish.contains("\"status\":\"interrupted\",\"bytes\":"), "\(finish.prefix(600))")
        let interrupted = finish.components(separatedBy: "\"status\":\"interrupted\",\"bytes\":").dropFirst()
        #expect(interrupted.contains { !$0.hasPrefix("0,") }, "no interrupted file holds bytes: \(finish.prefix(600))")
    }

    @Test func verboseListsEveryRequestWithItsFile() throws {
        let lines = (0..<2).map { server.dataURL(size: 4 << 20, name: "v\($0).bin") + "\n  out=v\($0).bin" }
        try lines.joined(separator: "\n").write(toFile: out.file("list.txt"), atomically: true, encoding: .utf8)
        let result = try runCLI(["-i", out.file("list.txt"), "-d", out.file("files"), "-v", "-n", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        for index in 0..<2 {
            #expect(result.stderr.contains("v\(index).bin: ") && result.stderr.contains("206"), "\(result.stderr.prefix(600))")
        }
    }

    @Test func theTableFitsTheTerminalAndShowsWhatInterruptedFilesHold() {
        var interrupted = BatchFileResult(index: 0, url: "http://127.0.0.1/a-rather-long-name-for-a-model-shard-00001-of-00010.safetensors", status: .interrupted)
        interrupted.path = "/data/models/a-rather-long-name-for-a-model-shard-00001-of-00010.safetensors"
        interrupted.bytes = 250 << 20
        interrupted.transferredBytes = 250 << 20
        interrupted.elapsedSeconds = 2.45
        interrupted.error = DownloadError(.cancelled, "interrupted; 262144000 of 1073741824 bytes are saved in /data/models/a-rather-long-name.part — rerun the same command to resume")
        var failed = BatchFileResult(index: 1, url: "http://127.0.0.1/b.bin", status: .failed)
        failed.error = DownloadError(.httpStatus(404), "list.txt line 2: http://127.0.0.1/b.bin: server answered HTTP 404 (not found), a long explanation that goes on")
        let summary = BatchSummary(files: [interrupted, failed], elapsedSeconds: 2.45)
        let table = BatchRenderer.table(summary, columns: 80)
        #expect(table.split(separator: "\n").allSatisfy { $0.count <= 80 }, "\(table)")
        #expect(table.contains("250.0 MiB"), "\(table)")
        #expect(!table.contains("0 B in"), "\(table)")
        #expect(table.contains("     error: list.txt line 2"), "\(table)")
    }
}
