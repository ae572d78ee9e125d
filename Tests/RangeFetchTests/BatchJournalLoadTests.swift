import Foundation
import Testing
@testable import RangeFetch

/// Loading the batch journal file itself: records across read chunks, junk between them, its mode.
struct BatchJournalLoadTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("rf-batchjournal") }

    private func open(loading: Bool = true) throws -> BatchJournal {
        guard case .journal(let journal) = BatchJournal.open(directory: directory.path, loading: loading) else {
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

    @Test func aJournalOthersCanReadIsMadeOwnerOnly() throws {
        let path = directory.file(BatchJournal.fileName)
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        let journal = try open(loading: false)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(journal.count == 0)
    }
}
