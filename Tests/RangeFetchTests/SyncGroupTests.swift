import Foundation
import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Small files made durable together (``SyncGroup``), from many threads at once as a batch's
/// workers commit them: each lands whole at its name with no `.part` left, a failure is its own
/// file's alone, and files committed at once share groups (fewer flushes than files).
@Suite(.serialized)
struct SyncGroupTests {
    /// Failures by file name, from any thread.
    private final class Failures: Sendable {
        let byName = Mutex<[String: String]>([:])
    }

    /// Commits, from `threads` threads at once, `perThread` files each (`tT-I.bin`, written as
    /// `.part` files in `directory`) to where `destination` says. Returns each failure's name
    /// and message.
    private func commit(threads: Int, perThread: Int, in directory: String, group: SyncGroup,
                        destination: @escaping @Sendable (String) -> String) -> [String: String] {
        let failures = Failures()
        let finished = DispatchSemaphore(value: 0)
        for thread in 0..<threads {
            Thread.detachNewThread {
                for index in 0..<perThread {
                    let name = "t\(thread)-\(index).bin"
                    do {
                        let file = try PartialFile(path: directory + "/" + name + ".part")
                        defer { file.close() }
                        let bytes = Array("\(name)\n".utf8)
                        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
                        try group.commit(file, to: destination(name))
                    } catch {
                        failures.byName.withLock { $0[name] = "\(error)" }
                    }
                }
                finished.signal()
            }
        }
        for _ in 0..<threads { finished.wait() }
        return failures.byName.withLock { $0 }
    }

    @Test func filesCommittedFromManyThreadsLandWholeAndShareGroups() throws {
        let directory = try TemporaryDirectory("rf-sync")
        let group = SyncGroup()
        let (threads, perThread) = (8, 40)
        let path = directory.path
        let failures = commit(threads: threads, perThread: perThread, in: path, group: group) { path + "/" + $0 }
        #expect(failures.isEmpty, "\(failures)")
        for thread in 0..<threads {
            for index in 0..<perThread {
                let name = "t\(thread)-\(index).bin"
                #expect((try? String(contentsOfFile: directory.file(name), encoding: .utf8)) == "\(name)\n")
                #expect(!FileManager.default.fileExists(atPath: directory.file(name + ".part")))
            }
        }
        // Eight threads committing at once: some flush carried more than one file.
        #expect(group.groupsFlushed >= 1 && group.groupsFlushed < threads * perThread, "\(group.groupsFlushed) groups")
    }

    /// Groups of at most two: the members left waiting after each flush are handed the next
    /// group in turn, and every file lands.
    @Test func smallGroupsHandTheRestOnUntilEveryFileLands() throws {
        let directory = try TemporaryDirectory("rf-sync")
        let group = SyncGroup(maximumMembers: 2)
        let path = directory.path
        let failures = commit(threads: 8, perThread: 20, in: path, group: group) { path + "/" + $0 }
        #expect(failures.isEmpty, "\(failures)")
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
        #expect(names.filter { !$0.hasSuffix(".part") }.count == 160 && !names.contains { $0.hasSuffix(".part") }, "\(names.count) entries")
        #expect(group.groupsFlushed >= 80, "\(group.groupsFlushed) groups of at most 2 for 160 files")
    }

    /// One thread's files go to a directory that does not exist: their renames fail (naming the
    /// destination) while the other threads' files, flushed in the same groups, land.
    @Test func aFileThatCannotBeRenamedFailsAloneAndTheOthersLand() throws {
        let directory = try TemporaryDirectory("rf-sync")
        let group = SyncGroup()
        let path = directory.path
        let failures = commit(threads: 4, perThread: 10, in: path, group: group) { name in
            name.hasPrefix("t0-") ? path + "/missing/" + name : path + "/" + name
        }
        #expect(Set(failures.keys) == Set((0..<10).map { "t0-\($0).bin" }), "\(failures)")
        #expect(failures.values.allSatisfy { $0.contains("missing/t0-") }, "\(failures)")
        for thread in 1..<4 {
            for index in 0..<10 {
                #expect(FileManager.default.fileExists(atPath: directory.file("t\(thread)-\(index).bin")))
            }
        }
        // The failed files stay as they were written, under their .part names.
        #expect(FileManager.default.fileExists(atPath: directory.file("t0-0.bin.part")))
    }
}
