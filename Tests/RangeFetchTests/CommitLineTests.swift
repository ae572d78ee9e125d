import Foundation
import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The lane's commit line (``CommitLine``): each file it writes lands whole at its name, reported
/// once; a member whose write fails is dropped without a report (its closure hands it on); a
/// rename that fails is that file's own failure; nothing is held once it is finished.
struct CommitLineTests {
    /// What `done` was called with, by name.
    private final class Reports: Sendable {
        let byName = Mutex<[String: [String?]]>([:])
    }

    /// Adds a member writing `contents` to `directory/name.part`, to be renamed to `destination`.
    private func add(_ name: String, contents: String, in directory: String, to destination: String,
                     line: CommitLine, reports: Reports) {
        let bytes = Array(contents.utf8)
        line.add(to: destination, bytes: bytes.count) {
            guard let file = try? PartialFile(path: directory + "/" + name + ".part") else { return nil }
            guard (try? bytes.withUnsafeBytes { raw in try file.write(raw, at: 0) }) != nil else {
                file.close()
                return nil
            }
            return file
        } done: { file, failure in
            file.close()
            reports.byName.withLock { $0[name, default: []].append(failure?.message) }
        }
    }

    @Test func filesLandWholeEachReportedOnceAndAFailedRenameIsItsOwn() throws {
        let directory = try TemporaryDirectory("rf-commit-line")
        let line = try CommitLine(maximumMembers: 8)
        let reports = Reports()
        for index in 0..<40 {
            add("f\(index)", contents: "file \(index)\n", in: directory.path, to: directory.file("f\(index).bin"),
                line: line, reports: reports)
        }
        // Its directory does not exist: the rename fails, for this file alone.
        add("lost", contents: "lost\n", in: directory.path, to: directory.file("missing/lost.bin"), line: line, reports: reports)
        #expect(line.backlog <= 41)
        line.finish()
        #expect(line.backlog == 0 && line.backlogBytes == 0)
        let byName = reports.byName.withLock { $0 }
        for index in 0..<40 {
            #expect(byName["f\(index)"] == [nil], "f\(index): \(byName["f\(index)"] ?? [])")
            #expect(try String(contentsOfFile: directory.file("f\(index).bin"), encoding: .utf8) == "file \(index)\n")
            #expect(!FileManager.default.fileExists(atPath: directory.file("f\(index).part")))
        }
        let lost = try #require(byName["lost"]?.first ?? nil, "the failed rename was not reported")
        #expect(lost.contains("lost.bin"), "\(lost)")
        // Not renamed: its .part stays for the usual path to deal with.
        #expect(FileManager.default.fileExists(atPath: directory.file("lost.part")))
    }

    @Test func aMemberWhoseWriteFailsIsDroppedWithoutAReport() throws {
        let directory = try TemporaryDirectory("rf-commit-line")
        // A link where the .part would go: PartialFile refuses it, the write closure gives nil.
        try FileManager.default.createSymbolicLink(atPath: directory.file("planted.part"), withDestinationPath: "/etc/hostname")
        let line = try CommitLine()
        let reports = Reports()
        add("planted", contents: "x", in: directory.path, to: directory.file("planted.bin"), line: line, reports: reports)
        add("fine", contents: "fine\n", in: directory.path, to: directory.file("fine.bin"), line: line, reports: reports)
        line.finish()
        #expect(line.backlog == 0 && line.backlogBytes == 0)
        let byName = reports.byName.withLock { $0 }
        #expect(byName["planted"] == nil, "\(byName)")
        #expect(byName["fine"] == [nil], "\(byName)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("planted.bin")))
        #expect(try String(contentsOfFile: directory.file("fine.bin"), encoding: .utf8) == "fine\n")
    }
}
