import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The partial file keeps writing to, and moves into place, the very file it opened, whatever
/// its name points to by then; a journal that is not ours alone is not read.
struct PartialFileTests {
    @Test func directWritesGoToTheFileOpenedAfterItsNameWasPointedElsewhere() throws {
        let directory = try SharedDirectory(mode: 0o700)
        let path = directory.file("data.bin.part")
        let file = try PartialFile(path: path)
        defer { file.close() }
        #expect(file.created)
        // Someone moves our file aside and puts another under its name before direct writes start.
        #expect(rename(path, directory.file("moved.part")) == 0)
        try Data("planted".utf8).write(to: URL(fileURLWithPath: path))
        file.enableDirectWrites()
        #expect(file.writesDirectly, "O_DIRECT refused on /var/tmp: the test shows nothing")
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: PartialFile.directAlignment)
        defer { block.deallocate() }
        for index in 0..<block.count { block[index] = UInt8(truncatingIfNeeded: index * 7) }
        try file.write(UnsafeRawBufferPointer(block), at: 0)
        try file.synchronize()
        let written = try Data(contentsOf: URL(fileURLWithPath: directory.file("moved.part")))
        #expect(written == Data(UnsafeRawBufferPointer(block)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("planted".utf8))
    }

    @Test func aFileThatReplacedThePartialNameIsNeverMovedIntoPlace() throws {
        let directory = try SharedDirectory(mode: 0o700)
        let path = directory.file("data.bin.part")
        let file = try PartialFile(path: path)
        defer { file.close() }
        #expect(unlink(path) == 0)
        try Data("planted".utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: DownloadError.self) { try file.rename(to: directory.file("data.bin")) }
        #expect(error?.message.contains("data.bin.part was removed or replaced by another file") == true, "\(String(describing: error))")
        #expect(error?.category == .fileSystem)
        #expect(!FileManager.default.fileExists(atPath: directory.file("data.bin")))
    }

    @Test func aJournalOfAnotherUserOrALinkIsNotRead() throws {
        let directory = try SharedDirectory(mode: 0o700)
        let path = directory.file("data.bin.part.rfjournal")
        let remote = RemoteFile(url: "http://127.0.0.1/x", size: 4 << 20, acceptsRanges: true,
                                etag: "\"e\"", lastModified: nil, suggestedName: "x", advertisedDigests: [])
        let store = JournalStore(path: path)
        try store.write(JournalRecord(file: remote.identity, size: 4 << 20, segments: [SegmentState(range: ByteRange(0, 4 << 20))]))
        guard case .record = store.load() else { throw TestFailure("our own journal was not read") }
        #expect(chown(path, 65534, 65534) == 0)
        guard case .unreadable(let why) = store.load() else { throw TestFailure("another user's journal was read") }
        #expect(why.contains("is owned by uid 65534"), "\(why)")
        #expect(unlink(path) == 0 && symlink(directory.file("elsewhere"), path) == 0)
        guard case .unreadable(let linked) = store.load() else { throw TestFailure("a link was read as the journal") }
        #expect(linked.contains("is a symbolic link"), "\(linked)")
    }
}
