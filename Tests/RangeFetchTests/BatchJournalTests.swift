import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The batch journal (`DIR/.rangefetch-batch`): a rerun of a finished batch asks no server
/// anything, `--recheck` asks again, and no stale, damaged or planted record is trusted.
/// Requests are counted in nginx's access log.
@Suite(.serialized)
final class BatchJournalTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer
    let lists: TemporaryDirectory
    let names = (1...5).map { "j\($0).bin" }
    var journal: String { out.file(".rangefetch-batch") }

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
        lists = try TemporaryDirectory("rf-lists")
        for name in names { try www.randomFile(name, size: 4 << 10) }
    }

    deinit { nginx.stop() }

    private func list(_ lines: [String]) throws -> String {
        let path = lists.file("list.txt")
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private var plainList: [String] { names.map { "\(nginx.baseURL)/\($0)" } }

    /// Runs the batch of `lines` (one job: records in list order), expecting success.
    @discardableResult
    private func batch(_ lines: [String], _ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> TestProcess.Result {
        let result = try runCLI(["-i", try list(lines), "-d", out.path, "-j", "1", "--json"] + extra)
        #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// Paths nginx was asked for since the log was last cleared.
    private func requested() -> Set<String> { Set(nginx.accessLog().map(\.path)) }

    private func alreadyComplete(_ result: TestProcess.Result) -> Int? {
        let finish = result.stdout.split(separator: "\n").last { $0.contains("\"event\":\"batch_finish\"") }
        return finish.flatMap { $0.firstRange(of: "\"already_complete\":").map { Int($0.upperBound < finish!.endIndex ? finish![$0.upperBound...].prefix(while: \.isNumber) : "") } } ?? nil
    }

    private func sameAsServed(_ name: String) throws -> Bool {
        try Checksums.sha256sum(out.file(name)) == Checksums.sha256sum(www.file(name))
    }

    @Test func aFinishedBatchRerunMakesNoRequest() throws {
        try batch(plainList)
        #expect(requested().count == names.count)
        var info = stat()
        #expect(lstat(journal, &info) == 0 && info.st_mode & 0o777 == 0o600, "the journal is owner-only")
        try nginx.clearAccessLog()
        let rerun = try batch(plainList)
        #expect(nginx.accessLog().isEmpty, "\(nginx.accessLog().map(\.path))")
        #expect(alreadyComplete(rerun) == names.count, "\(rerun.stdout)")
        // Every file still reported, with its path and size.
        #expect(rerun.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"finish\"") && $0.contains("\"already_complete\":true") }.count == names.count)
    }

    @Test func aRerunOnATerminalCountsSettledFilesInItsTable() throws {
        try batch(plainList)
        try nginx.clearAccessLog()
        let command = "\(try TestProcess.rangefetchBinary) -i \(try list(plainList)) -d \(out.path) -j 2"
        let rerun = try TestProcess.run("/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["TERM": "xterm"])
        #expect(rerun.status == 0, "\(rerun.stdout)")
        #expect(rerun.stdout.contains("\(names.count) already-complete"), "\(rerun.stdout)")
        #expect(nginx.accessLog().isEmpty)
    }

    @Test func recheckAsksEveryServerAgain() throws {
        try batch(plainList)
        try nginx.clearAccessLog()
        let rerun = try batch(plainList, ["--recheck"])
        #expect(requested() == Set(names.map { "/" + $0 }))
        #expect(nginx.accessLog().allSatisfy { $0.method == "HEAD" || $0.method == "GET" && $0.bytes < 4 << 10 },
                "a complete file is only asked about, not fetched again")
        #expect(alreadyComplete(rerun) == names.count, "\(rerun.stdout)")
    }

    @Test func deletedTruncatedReplacedOrRetargetedFilesAreFetchedAgain() throws {
        // j5.bin is saved as out=j4-copy.bin first; the rerun's list points that path at j4.bin.
        let first = plainList.dropLast() + ["\(nginx.baseURL)/j5.bin", "  out=j4-copy.bin"]
        try batch(Array(first))
        try FileManager.default.removeItem(atPath: out.file("j1.bin"))
        #expect(truncate(out.file("j2.bin"), 100) == 0)
        // The same bytes under a new inode (a restore, a copy over it).
        let copy = out.file("j3.tmp")
        try FileManager.default.copyItem(atPath: out.file("j3.bin"), toPath: copy)
        #expect(rename(copy, out.file("j3.bin")) == 0)
        try nginx.clearAccessLog()
        let second = plainList.dropLast() + ["\(nginx.baseURL)/j4.bin", "  out=j4-copy.bin"]
        // The truncated file is not skipped: as without a journal, a shorter file at the path is
        // refused unless continued (--continue) or replaced.
        let refused = try runCLI(["-i", try list(Array(second)), "-d", out.path, "-j", "1"])
        #expect(refused.status == 2 && refused.stderr.contains("j2.bin already exists (100 bytes"), "\(refused.stderr)")
        try batch(Array(second), ["--continue"])
        #expect(requested() == ["/j1.bin", "/j2.bin", "/j3.bin", "/j4.bin"], "\(requested())")
        for name in ["j1.bin", "j2.bin", "j3.bin"] { #expect(try sameAsServed(name)) }
        // (j4-copy.bin is then judged by the per-file logic, as without a journal: a file of the
        // server's size at the path is taken as complete when no digest says otherwise.)
        // Their records were replaced: a third run asks nothing.
        try nginx.clearAccessLog()
        try batch(Array(second))
        #expect(nginx.accessLog().isEmpty, "\(requested())")
    }

    @Test func aDamagedOrTornRecordIsIgnoredAndOnlyItsEntryProbed() throws {
        try batch(plainList)
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: journal)))
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        #expect(lines.count == names.count + 1)
        // A bit flipped in the first record (j1.bin), the last one (j5.bin) torn as by a crash.
        bytes[lines[0].startIndex + 100] ^= 0x20
        bytes.removeLast(20)
        try Data(bytes).write(to: URL(fileURLWithPath: journal))
        try nginx.clearAccessLog()
        let rerun = try batch(plainList)
        #expect(requested() == ["/j1.bin", "/j5.bin"], "\(requested())")
        #expect(alreadyComplete(rerun) == names.count, "\(rerun.stdout)")
        // The two are recorded again, after the torn line: the next run asks nothing.
        try nginx.clearAccessLog()
        try batch(plainList)
        #expect(nginx.accessLog().isEmpty, "\(requested())")
    }

    @Test func aJournalPlantedAsALinkIsRefusedAndLeftAlone() throws {
        let target = lists.file("victim")
        try "precious\n".write(toFile: target, atomically: true, encoding: .utf8)
        #expect(symlink(target, journal) == 0)
        let result = try batch(plainList)
        #expect(result.stdout.contains("\"kind\":\"batch_journal_unused\""), "\(result.stdout)")
        #expect(result.stdout.contains("symbolic link"), "\(result.stdout)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious\n")
        for name in names { #expect(try sameAsServed(name)) }
        // Without a journal a rerun asks the servers, as it always did; the warning is said once in words.
        try nginx.clearAccessLog()
        let rerun = try runCLI(["-i", try list(plainList), "-d", out.path, "-j", "1"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(requested().count == names.count)
        #expect(rerun.stderr.contains("warning: batch journal \(journal) not used (\(journal) is a symbolic link)"), "\(rerun.stderr)")
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give the journal to another user"))
    func aJournalOfAnotherUserIsRefusedAndLeftAlone() throws {
        try batch(plainList)
        let before = try Data(contentsOf: URL(fileURLWithPath: journal))
        #expect(chown(journal, 65534, 65534) == 0)
        try nginx.clearAccessLog()
        let result = try batch(plainList)
        #expect(result.stdout.contains("\"kind\":\"batch_journal_unused\"") && result.stdout.contains("owned by uid 65534"), "\(result.stdout)")
        #expect(requested().count == names.count, "its records are not trusted")
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == before, "nor is it written to")
    }

    @Test func aBatchWithAFailedEntryIsRerunWithItsFinishedEntriesSkipped() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        // The fault server's file fails at the first run (every attempt cut), so the batch ends
        // with three entries finished and one not.
        let broken = fault.dataURL(size: 1 << 20, name: "late.bin", "cut=0")
        let lines = Array(plainList.prefix(3)) + [broken]
        let first = try runCLI(["-i", try list(lines), "-d", out.path, "-j", "1", "--max-tries", "1"])
        #expect(first.status != 0)
        try nginx.clearAccessLog()
        let healed = fault.dataURL(size: 1 << 20, name: "late.bin")
        let second = try runCLI(["-i", try list(Array(plainList.prefix(3)) + [healed]), "-d", out.path, "-j", "1"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(nginx.accessLog().isEmpty, "finished entries were asked again: \(requested())")
        try fault.expectFile(out.file("late.bin"), size: 1 << 20, sourceLocation: #_sourceLocation)
    }

    @Test func aKilledBatchResumesWithItsFinishedEntriesSkipped() throws {
        let fault = try FaultServer()
        defer { fault.stop() }
        let bigSize: Int64 = 6 << 20
        let lines = Array(plainList.prefix(3)) + [fault.dataURL(size: bigSize, name: "big.bin", "rate=\(2 << 20)")]
        let arguments = ["-i", try list(lines), "-d", out.path, "-j", "1", "-n", "4"]
        let run = try RunningCLI(arguments)
        #expect(run.waitUntilReceived(1 << 20), "the big file never got going")
        run.send(SIGKILL)
        _ = try run.wait()
        try nginx.clearAccessLog()
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(nginx.accessLog().isEmpty, "finished entries were asked again: \(requested())")
        try fault.expectFile(out.file("big.bin"), size: bigSize, sourceLocation: #_sourceLocation)
    }

    @Test func aBatchThatFinishesNothingLeavesNoJournal() throws {
        let result = try runCLI(["-i", try list(["\(nginx.baseURL)/gone.bin"]), "-d", out.file("new"), "-q"])
        #expect(result.status == 3, "\(result.stderr)")
        #expect(!out.exists("new/.rangefetch-batch"))
    }

    @Test func aSingleDownloadKeepsNoBatchJournal() throws {
        let result = try runCLI(["\(nginx.baseURL)/j1.bin", "-d", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try sameAsServed("j1.bin"))
        #expect(!out.exists(".rangefetch-batch"))
    }
}
