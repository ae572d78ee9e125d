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
        line.add(to: destination, bytes: bytes.count, now: MonotonicTime.now()) {
            guard let file = try? PartialFile(path: directory + "/" + name + ".part") else { return nil }
            guard (try? bytes.withUnsafeBytes { raw in try file.write(raw, at: 0) }) != nil else {
                file.close()
                return nil
            }
            return CommitLine.Written(file: file) { file, failure in
                file.close()
                reports.byName.withLock { $0[name, default: []].append(failure?.message) }
            }
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

    /// When the lane wakes the line: a group's worth of files, the first one waiting long enough,
    /// or the lane idle; never for none. Files not yet due say when they will be.
    @Test(arguments: [
        // (files added, at, asked at, lane idle, due)
        (0, 0.0, 1.0, true, false),
        (1, 0.0, 0.0, false, false),
        (1, 0.0, 0.0, true, true),
        (1, 0.0, CommitLine.Wake.linger, false, true),
        (CommitLine.Wake.members - 1, 0.0, 0.001, false, false),
        (CommitLine.Wake.members, 0.0, 0.0, false, true),
    ])
    func aGroupIsDueWhenWorthWakingFor(_ added: Int, _ at: Double, _ asked: Double, _ laneIdle: Bool, _ due: Bool) {
        var wake = CommitLine.Wake()
        for _ in 0..<added { wake.added(now: at) }
        let woken = wake.isDue(now: asked, laneIdle: laneIdle)
        #expect(woken == due)
        // Once woken for them, they are not due again; until then they say when they will be.
        #expect(wake.deadline == (due || added == 0 ? nil : at + CommitLine.Wake.linger))
        let again = wake.isDue(now: asked + 1, laneIdle: true)
        #expect(!again || !due)
    }

    /// A file added and woken for is made durable and reported while the lane goes on, before
    /// the line is finished; one added and not yet due waits for the next wake.
    @Test func aFileWokenForLandsBeforeTheLineIsFinished() throws {
        let directory = try TemporaryDirectory("rf-commit-line")
        let line = try CommitLine()
        let reports = Reports()
        add("early", contents: "early\n", in: directory.path, to: directory.file("early.bin"), line: line, reports: reports)
        #expect(line.wakeIfDue(now: MonotonicTime.now(), laneIdle: true) == nil)
        let deadline = MonotonicTime.now() + 30
        while reports.byName.withLock({ $0["early"] == nil }) && MonotonicTime.now() < deadline { usleep(1000) }
        #expect(reports.byName.withLock { $0["early"] } == [nil])
        #expect(try String(contentsOfFile: directory.file("early.bin"), encoding: .utf8) == "early\n")
        line.finish()
        #expect(line.backlog == 0)
    }
}
