import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A `-i` list is read as a stream (``ManifestReader``, ``BatchFeed``): the same parsing as
/// ``Manifest/parse(_:source:)``, shards chosen as lines go by, and errors found when reached.
@Suite(.serialized)
final class StreamedListTests {
    let lists: TemporaryDirectory
    let out: TemporaryDirectory

    init() throws {
        lists = try TemporaryDirectory("rf-stream-lists")
        out = try TemporaryDirectory("rf-stream-out")
    }

    private func write(_ name: String, _ text: String) throws -> String {
        let path = lists.file(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func readAll(_ path: String) throws(DownloadError) -> [BatchEntry] {
        let reader = try ManifestReader(path: path)
        var entries: [BatchEntry] = []
        while let entry = try reader.next() { entries.append(entry) }
        return entries
    }

    static let texts: [String] = [
        "http://h/a.bin\nhttp://h/b.bin\n",
        "http://h/a.bin\r\n  out=x.bin\r\n  dir=d\r\nhttp://h/b.bin", // CRLF, no final line break
        "# c\n\n{\"url\": \"http://h/j.bin\", \"out\": \"j2.bin\"}\n\thttp://h/ignored-indent\n",
        "http://h/a.bin\thttp://m/a.bin\n  header=X-A: 1\n  checksum=sha-256=" + String(repeating: "a", count: 64) + "\n",
        "",
    ]

    @Test(arguments: texts)
    func readerParsesLikeTheWholeText(_ text: String) throws {
        let path = try write("same.txt", text)
        let whole = Result { () throws(DownloadError) in try Manifest.parse(text, source: path) }
        let streamed = Result { () throws(DownloadError) in try readAll(path) }
        switch (whole, streamed) {
        case (.success(let a), .success(let b)): #expect(a == b)
        case (.failure(let a), .failure(let b)): #expect(a.message == b.message)
        default: Issue.record("parse: \(whole), stream: \(streamed)")
        }
    }

    @Test func readerCrossesItsBufferAndRefusesAnEndlessLine() throws {
        // Lines that straddle the 64 KiB reads.
        let urls = (0..<20_000).map { "http://h/\(String(repeating: "p", count: $0 % 97))/f\($0).bin" }
        let path = try write("long.txt", urls.joined(separator: "\n") + "\n")
        #expect(try readAll(path).map(\.url) == urls)
        let endless = try write("endless.txt", "http://h/a.bin\nhttp://h/" + String(repeating: "x", count: ManifestReader.maximumLineBytes + 10) + "\n")
        let error = #expect(throws: DownloadError.self) { try self.readAll(endless) }
        #expect(error?.message.contains("endless.txt:2: a line longer than") == true, "\(String(describing: error))")
    }

    @Test func fingerprintsKnowEveryPathTheyWereGiven() {
        var fingerprints = PathFingerprints()
        var fresh = 0
        for index in 0..<50_000 where fingerprints.insert("out/dir\(index % 13)/f\(index).bin") { fresh += 1 }
        var seenAgain = 0
        for index in stride(from: 0, to: 50_000, by: 7) where !fingerprints.insert("out/dir\(index % 13)/f\(index).bin") { seenAgain += 1 }
        #expect(fresh == 50_000)
        #expect(seenAgain == (50_000 + 6) / 7)
        #expect(fingerprints.count == 50_000)
    }

    @Test(arguments: [(0, 4), (3, 4), (1, 7)])
    func shardSelectionMatchesFilteringTheWholeList(index: Int, count: Int) throws {
        let text = (0..<300).map { "http://127.0.0.1:1/s/f\($0).bin" + ($0 % 5 == 0 ? "\n  out=o\($0).bin" : "") }.joined(separator: "\n")
        let path = try write("shard.txt", text)
        let selector = try ShardSelector(index: index, count: count)
        let expected = try Manifest.parse(text, source: path).filter { selector.includes($0.url) }
        let feed = try BatchFeed(BatchInput(listPath: path, shard: selector), defaultDirectory: out.path)
        var handed: [(index: Int, entry: BatchEntry)] = []
        while let next = feed.next() { handed.append(next) }
        #expect(feed.failure == nil)
        #expect(handed.map(\.entry) == expected)
        #expect(handed.map(\.index) == Array(0..<expected.count))
    }

    /// A duplicate path far down a list is found by its fingerprint and confirmed by reading the
    /// list again (a file), or refused as unconfirmable (a pipe): either way no later entry is handed out.
    @Test func duplicatePathLateInALongListStopsTheFeed() throws {
        var lines = (0..<30_000).map { "http://127.0.0.1:1/a/f\($0).bin" }
        lines.append("http://127.0.0.1:1/b/f7.bin") // saved as f7.bin, like line 8
        lines.append("http://127.0.0.1:1/a/after.bin")
        let path = try write("dup.txt", lines.joined(separator: "\n"))
        let feed = try BatchFeed(BatchInput(listPath: path), defaultDirectory: out.path)
        var handed = 0
        while feed.next() != nil { handed += 1 }
        #expect(handed == 30_000)
        let message = feed.failure?.message ?? ""
        #expect(feed.failure?.category == .usage)
        #expect(message.contains("dup.txt:30001") && message.contains("dup.txt:8") && message.contains("would both be saved as"), "\(message)")
    }

    // MARK: The CLI

    /// Files before a malformed line are fetched; at the line the batch stops with the usage
    /// code, naming the file and line, and nothing after it is requested.
    @Test func malformedLineLateInTheListStopsTheBatchNamingFileAndLine() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        var lines = (0..<40).map { fault.dataURL(size: 4096, name: "g\($0).bin") }
        lines.append("ftp://127.0.0.1/not-http.bin") // line 41
        lines += (0..<5).map { fault.dataURL(size: 4096, name: "after\($0).bin") }
        let path = try write("late.txt", lines.joined(separator: "\n") + "\n")
        let result = try runCLI(["-i", path, "-d", out.path, "-j", "2", "-q"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("late.txt:41:") && result.stderr.contains("ftp"), "\(result.stderr)")
        // Lines 1-39 were handed out before the reader reached line 41 (line 40's entry waits for
        // the line after it, which may add options) and all of them finished.
        for index in 0..<39 { #expect(out.exists("g\(index).bin"), "g\(index).bin") }
        let requested = try fault.stats().log.map(\.path)
        #expect(!requested.contains { $0.contains("after") }, "\(requested)")
    }

    /// Through a pipe the reader keeps a copy in $TMPDIR, so the duplicate is confirmed and both
    /// lines named; with no room for a copy the repeated fingerprint is refused as a possible one.
    @Test(arguments: [true, false])
    func duplicatePathLateInAListThroughAPipeIsRefused(withRoomForACopy: Bool) throws {
        var lines = (0..<5_000).map { "http://127.0.0.1:1/a/f\($0).bin" }
        lines.append("http://127.0.0.1:1/b/f3.bin")
        let path = try write("piped-dup.txt", lines.joined(separator: "\n") + "\n")
        let temporary = withRoomForACopy ? lists.path : lists.file("no-such-directory")
        // Shard 0 of 100000: every line is checked, almost none fetched (they would fail, port 1).
        let result = try TestProcess.run("/bin/bash", ["-c", "cat '\(path)' | \"$RF\" -i - --shard 0/100000 -d '\(out.path)' -q"],
                                         environment: ["RF": try TestProcess.rangefetchBinary, "TMPDIR": temporary])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("stdin:5001") && result.stderr.contains("f3.bin"), "\(result.stderr)")
        if withRoomForACopy {
            #expect(result.stderr.contains("and stdin:4 ") && result.stderr.contains("would both be saved as"), "\(result.stderr)")
        } else {
            #expect(result.stderr.contains("may name too"), "\(result.stderr)")
        }
        // The copy goes with the reader.
        let left = try FileManager.default.contentsOfDirectory(atPath: lists.path).filter { $0.hasPrefix("rangefetch-list-") }
        #expect(left.isEmpty, "\(left)")
    }

    /// A list on standard input (it may carry credentials) is copied to a file with no name: while
    /// the batch runs and after a SIGKILL, $TMPDIR holds nothing (duplicatePathLateInAList... shows
    /// the copy still tells a duplicate).
    @Test func aListOnStandardInputLeavesNoFileBehindAfterSIGKILL() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        let temporary = lists.file("tmp")
        #expect(mkdir(temporary, 0o700) == 0)
        let fifo = lists.file("stdin.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let process = Process()
        _ = try TestProcess.launch(process, "/bin/bash", ["-c", "exec \"$RF\" -i - -d '\(out.path)' -j 1 < '\(fifo)'"],
                                   environment: ["RF": try TestProcess.rangefetchBinary, "TMPDIR": temporary])
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let writer = try #require(FileHandle(forWritingAtPath: fifo))
        defer { try? writer.close() }
        let secret = fault.dataURL(size: 4096, name: "first.bin", "token=s3cret-list-token")
        writer.write(Data((secret + "\n  header=Authorization: Bearer s3cret-list-header\n" + fault.dataURL(size: 4096, name: "second.bin") + "\n").utf8))
        let deadline = Date().addingTimeInterval(30)
        while !out.exists("first.bin") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(out.exists("first.bin"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty)
        // The copy exists, with no name: open only in this process.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd")
        let targets = descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/fd/\($0)") }
        #expect(targets.contains { $0.hasPrefix(temporary + "/") && $0.hasSuffix("(deleted)") }, "\(targets)")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty)
    }

    /// The first file is fetched while the list's writer has not finished it: a FIFO held open.
    @Test func firstFileFinishesBeforeTheListIsComplete() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        let fifo = lists.file("list.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let run = try RunningCLI(["-i", fifo, "-d", out.path, "-j", "1"])
        // Opening blocks until rangefetch opens the FIFO for reading.
        let writer = try #require(FileHandle(forWritingAtPath: fifo))
        // The first entry is complete once the next line starts (it could carry options).
        writer.write(Data((fault.dataURL(size: 4096, name: "first.bin") + "\n" + fault.dataURL(size: 4096, name: "second.bin") + "\n").utf8))
        let deadline = Date().addingTimeInterval(30)
        while !out.exists("first.bin") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(out.exists("first.bin"), "the first file did not finish while the list was open")
        writer.write(Data((fault.dataURL(size: 4096, name: "third.bin") + "\n").utf8))
        try writer.close()
        let (status, stderr) = try run.wait()
        #expect(status == 0, "\(stderr)")
        for name in ["first.bin", "second.bin", "third.bin"] {
            try fault.expectFile(out.file(name), size: 4096, sourceLocation: #_sourceLocation)
        }
    }

    /// Ctrl-C while the list's writer is idle: the batch stops at once instead of waiting for
    /// the rest of the list.
    @Test func interruptWhileAListPipeIsIdleStopsTheBatch() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        let fifo = lists.file("idle.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let run = try RunningCLI(["-i", fifo, "-d", out.path])
        let writer = try #require(FileHandle(forWritingAtPath: fifo))
        defer { try? writer.close() }
        writer.write(Data((fault.dataURL(size: 4096, name: "one.bin") + "\n" + fault.dataURL(size: 4096, name: "two.bin") + "\n").utf8))
        let deadline = Date().addingTimeInterval(30)
        while !out.exists("one.bin") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(out.exists("one.bin"))
        run.send(SIGINT)
        // The writer is still open: only the stop can end the run.
        let (status, stderr) = try run.wait(timeoutSeconds: 20)
        #expect(status == 130, "\(stderr)")
    }
}
