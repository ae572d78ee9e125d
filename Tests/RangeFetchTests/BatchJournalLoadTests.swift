import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Loading the batch journal file itself: records across read chunks, junk between them, its mode.
struct BatchJournalLoadTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("rf-batchjournal") }

    private func open(loading: Bool = true) throws -> BatchJournal {
        guard case .journal(let journal) = try BatchJournal.open(directory: directory.path, loading: loading) else {
            throw TestFailure("the journal was not opened")
        }
        return journal
    }

    private static func record(_ number: Int) -> BatchRecord {
        BatchRecord(key: BatchKey(url: "http://127.0.0.1/\(number).bin", path: "d/\(number).bin", checksums: []),
                    stamp: stamp(number),
                    details: .init(url: "http://127.0.0.1/\(number).bin", path: "d/\(number).bin", etag: "\"e\(number)\"",
                                   lastModified: nil, digests: []))
    }

    private static func stamp(_ number: Int) -> FileStamp {
        FileStamp(size: Int64(number), modifiedNanoseconds: 1_000 + Int64(number), changedNanoseconds: 2_000, inode: UInt64(number), device: 1)
    }

    @Test func recordsAcrossManyReadChunksAllLoadAndJunkBetweenThemIsCounted() throws {
        let count = 8_000 // ~2.4 MB: records cross the 1 MiB read chunks
        do {
            let journal = try open()
            for number in 0..<count / 2 { #expect(journal.append(Self.record(number)) == nil) }
        }
        // Junk: a line longer than any record, and a damaged one, between good records.
        let handle = try #require(FileHandle(forWritingAtPath: directory.file(BatchJournal.fileName)))
        handle.seekToEndOfFile()
        handle.write(Data(repeating: UInt8(ascii: "x"), count: BatchJournal.maximumLineBytes * 3) + Data("\nnot a record\n".utf8))
        try handle.close()
        do {
            let journal = try open()
            for number in count / 2..<count { #expect(journal.append(Self.record(number)) == nil) }
        }
        let journal = try open()
        #expect(journal.count == count)
        #expect(journal.ignoredLines == 2)
        for number in [0, 1, count / 2 - 1, count / 2, count - 1] {
            #expect(journal.isFinished(Self.record(number).key, stamp: Self.stamp(number)))
        }
        // The same key with a stamp that differs in any field is not finished.
        var changed = Self.stamp(7)
        changed.changedNanoseconds += 1
        #expect(!journal.isFinished(Self.record(7).key, stamp: changed))
    }

    /// Also when the records are not loaded (a `--recheck` run only appends).
    @Test(arguments: [true, false]) func aTornLastLineIsEndedSoTheNextRecordIsReadable(loading: Bool) throws {
        do { _ = try open().append(Self.record(1)) }
        let path = directory.file(BatchJournal.fileName)
        #expect(truncate(path, off_t(FileSystem.size(of: path) ?? 0) - 3) == 0)
        do {
            let journal = try open(loading: loading)
            #expect(journal.count == 0 && journal.ignoredLines == (loading ? 1 : 0))
            #expect(journal.append(Self.record(2)) == nil)
        }
        let journal = try open()
        #expect(journal.count == 1 && journal.isFinished(Self.record(2).key, stamp: Self.stamp(2)))
    }

    /// Ctrl-C while a journal of many records loads ends the run at once, not when the load is
    /// done (a huge journal took 14-24 s to load before a Ctrl-C was seen).
    @Test func anInterruptWhileAHugeJournalLoadsEndsTheRunAtOnce() throws {
        // Copies of one record: each is read, checked and stored as any record would be.
        let line = Data(Self.record(1).line)
        var block = Data()
        block.reserveCapacity(line.count * 4096)
        for _ in 0..<4096 { block.append(line) }
        let path = directory.file(BatchJournal.fileName)
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        for _ in 0..<Self.hugeJournalBlocks { handle.write(block) }
        try handle.close()
        let list = directory.file("list.txt")
        try "http://127.0.0.1:1/never.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let run = try RunningCLI(["-i", list, "-d", directory.path])
        // Interrupted once the journal is open, i.e. while it loads.
        let deadline = Date().addingTimeInterval(30)
        func journalIsOpen() -> Bool {
            let fds = "/proc/\(run.pid)/fd"
            return ((try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []).contains {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: fds + "/" + $0)) == path
            }
        }
        while !journalIsOpen() && Date() < deadline { usleep(2_000) }
        #expect(journalIsOpen(), "the journal was never seen open")
        let interrupted = Date()
        run.send(SIGINT)
        let (status, stderr) = try run.wait(timeoutSeconds: 60)
        let seconds = Date().timeIntervalSince(interrupted)
        #expect(status == 130, "\(stderr)")
        #expect(seconds < 2, "took \(seconds) s to stop after Ctrl-C")
        #expect(stderr.contains("interrupted"), "\(stderr)")
    }

    /// Blocks of 4,096 records (~1.3 MB) in the journal of the interrupt test: ~1.3 GB would be
    /// the size; 100 (130 MB) take well over 2 s to load in a debug build.
    static let hugeJournalBlocks = 100

    @Test func aJournalOthersCanReadIsMadeOwnerOnly() throws {
        let path = directory.file(BatchJournal.fileName)
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        let journal = try open(loading: false)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(journal.count == 0)
    }
}
