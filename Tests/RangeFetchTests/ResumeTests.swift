import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Crash-safe resume: SIGKILL at many points, then the same command again, against a real
/// nginx whose `/slow/` location rate-limits each request.
@Suite(.serialized)
final class ResumeTests: SlowNginxSuite {
    /// Bytes nginx sent for the file across every run so far.
    func bytesServed() -> Int64 {
        nginx.accessLog().filter { $0.method == "GET" && $0.path.hasSuffix("/data.bin") }.map(\.bytes).reduce(0, +)
    }

    /// What the journal may legitimately lose per kill: one checkpoint interval of every
    /// connection plus one write buffer each.
    var allowancePerKill: Int64 {
        Int64(Self.connections) * (Self.ratePerRequest * 1 + (1 << 20))
    }

    func killAt(fraction: Double) throws {
        let run = try RunningCLI(arguments)
        #expect(run.waitUntilReceived(Int64(Double(Self.size) * fraction)), "never reached \(fraction)")
        run.send(SIGKILL)
        _ = try run.wait()
    }

    func finishAndCheck(kills: Int) throws {
        let result = try runCLI(["-q"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        #expect(!out.exists("data.bin.part") && !out.exists("data.bin.part.rfjournal"))
        usleep(200_000) // let nginx finish logging aborted requests
        let served = bytesServed()
        let limit = Int64(Double(Self.size) * 1.05) + Int64(kills) * allowancePerKill
        print("resume efficiency: served \(served) bytes for a \(Self.size)-byte file after \(kills) kill(s): \(String(format: "%.3f", Double(served) / Double(Self.size)))")
        #expect(served <= limit, "served \(served) bytes, limit \(limit)")
    }

    static let fractions: [Double] = [0.02, 0.25, 0.5, 0.75, 0.85]

    @Test(arguments: fractions)
    func resumesAfterSigkillWithoutRefetchingCheckpointedBytes(fraction: Double) throws {
        try killAt(fraction: fraction)
        #expect(out.exists("data.bin.part"))
        #expect(out.exists("data.bin.part.rfjournal"))
        #expect(!out.exists("data.bin"))
        try finishAndCheck(kills: 1)
    }

    /// A presigned link given again with a fresh signature (another date and signature; nginx
    /// ignores the query) resumes where the killed run stopped: the journal names the link
    /// without its signature's parameters (``JournalIdentity``) and holds none of them.
    @Test func aLinkSignedAgainResumesWhereTheKilledRunStopped() throws {
        func signed(_ date: String, _ signature: String) -> [String] {
            ["\(url)?X-Amz-Date=\(date)&X-Amz-Expires=600&X-Amz-Signature=\(signature)", "-o", target,
             "-n", "\(Self.connections)", "--min-segment", "16M"]
        }
        let run = try RunningCLI(signed("20261127T100000Z", "aaaa1111"))
        #expect(run.waitUntilReceived(Self.size / 3), "never reached a third")
        run.send(SIGKILL)
        _ = try run.wait()
        let journal = String(decoding: try Data(contentsOf: URL(fileURLWithPath: out.file("data.bin.part.rfjournal"))), as: UTF8.self)
        #expect(journal.contains("\"url\":\"\(url.replacingOccurrences(of: "/", with: "\\/"))\""), "\(journal.prefix(300))")
        #expect(!journal.contains("X-Amz") && !journal.contains("aaaa1111"))
        let result = try runCLI(["--json"] + signed("20261127T110000Z", "bbbb2222"))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("\"resumed_bytes\":0,"), "\(result.stdout.prefix(400))")
        #expect(!result.stderr.contains("belongs to a download of"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        usleep(200_000) // let nginx finish logging aborted requests
        #expect(bytesServed() <= Int64(Double(Self.size) * 1.05) + allowancePerKill, "served \(bytesServed())")
    }

    @Test func survivesTwoKillsInARow() throws {
        try killAt(fraction: 0.3)
        try killAt(fraction: 0.6)
        try finishAndCheck(kills: 2)
    }

    @Test func changedRemoteFileStartsOverAndNeverMixesVersions() throws {
        try killAt(fraction: 0.4)
        let replacement = try www.randomFile("data.bin.new", size: Self.size)
        sleep(1) // a new mtime second, so nginx's ETag and Last-Modified change
        #expect(rename(replacement, source) == 0)
        utime(source, nil)
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("changed"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
    }

    @Test func interruptWithSigintExits130AndResumes() throws {
        let run = try RunningCLI(arguments)
        #expect(run.waitUntilReceived(Self.size / 3))
        run.send(SIGINT)
        let (status, stderr) = try run.wait()
        #expect(status == 130)
        #expect(stderr.contains("rerun the same command to resume"), "\(stderr)")
        #expect(run.outputLines.last?.contains("\"event\":\"error\"") == true)
        #expect(out.exists("data.bin.part.rfjournal"))
        try finishAndCheck(kills: 1)
    }

    /// A server without ranges: no journal, so Ctrl-C must not promise a resume.
    @Test func interruptingASingleStreamSaysItCannotResume() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let run = try RunningCLI([server.dataURL(size: 32 << 20, "norange=1&rate=4000000"), "-o", out.file("single.bin"), "--json"])
        #expect(run.waitUntilReceived(1 << 20))
        run.send(SIGINT)
        let (status, stderr) = try run.wait()
        #expect(status == 130)
        #expect(stderr.contains("does not serve byte ranges") && stderr.contains("starts from the beginning"), "\(stderr)")
        #expect(!stderr.contains("to resume"), "\(stderr)")
    }

    @Test func secondProcessOnTheSamePathFailsFast() throws {
        let first = try RunningCLI(arguments)
        #expect(first.waitUntilReceived(1))
        let second = try runCLI(arguments, timeoutSeconds: 20)
        #expect(second.status == 4)
        #expect(second.stderr.contains("in use by another rangefetch process"), "\(second.stderr)")
        first.send(SIGKILL)
        _ = try first.wait()
        try finishAndCheck(kills: 1)
    }

    @Test func completedFileIsReportedWithoutRefetching() throws {
        try finishAndCheck(kills: 0)
        try nginx.clearAccessLog()
        let again = try runCLI(arguments)
        #expect(again.status == 0)
        #expect(bytesServed() == 0)
    }

    @Test func staleJournalAfterACrashDuringTheRenameIsHarmless() throws {
        try finishAndCheck(kills: 0)
        // The crash window: the file was renamed into place but the journal not yet removed.
        try "stale".write(toFile: out.file("data.bin.part.rfjournal"), atomically: true, encoding: .utf8)
        try nginx.clearAccessLog()
        let again = try runCLI(arguments)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(bytesServed() == 0)
        #expect(!out.exists("data.bin.part.rfjournal"))
    }

    @Test func completePartialWithJournalIsRenamedWithoutRefetching() async throws {
        // The other crash window: every byte durable and journaled, rename not yet done.
        let remote = try Prober(request: RequestOptions(), cancellation: CancellationFlag(), loop: CurlLoop()).probe(url)
        #expect(copyfile(source, out.file("data.bin.part")))
        let segments = try SegmentPlanner(connections: 4, minimumSegmentBytes: 16 << 20).plan(size: Self.size)
            .map { try JournalBlocksResumeTests.withBlocks(SegmentState(range: $0, written: $0.count), of: source) }
        try JournalStore(path: out.file("data.bin.part.rfjournal")).write(JournalRecord(file: remote.identity, size: Self.size, segments: segments))
        try nginx.clearAccessLog()
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(nginx.accessLog().filter { $0.method == "GET" }.isEmpty)
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
    }

    @Test func existingDifferentFileIsNeverOverwrittenSilently() throws {
        try "not the file".write(toFile: target, atomically: true, encoding: .utf8)
        let refused = try runCLI(arguments)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--continue") && refused.stderr.contains("--overwrite"), "\(refused.stderr)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "not the file")
        let replaced = try runCLI(["--overwrite"] + arguments)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
    }

    @Test func continueAdoptsAnExistingPrefix() throws {
        let prefix: Int64 = Self.size / 2
        let copy = try TestProcess.run("/bin/sh", ["-c", "head -c \(prefix) '\(source)' > '\(target)'"])
        #expect(copy.status == 0)
        let result = try runCLI(["--continue"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        #expect(bytesServed() <= Self.size - prefix + allowancePerKill)
    }

    /// `--continue` onto a file that only has the download's name: its bytes are checked at both
    /// ends of the prefix before any is taken, and a mismatch is refused with nothing changed.
    @Test(arguments: ["foreign", "zero-tail", "tiny"])
    func continueRefusesAPrefixThatIsNotTheFilesStart(_ kind: String) throws {
        let prefix: Int64 = Self.size / 2
        let make = switch kind {
        case "foreign": "head -c \(prefix) /dev/urandom > '\(target)'"
        // The right first bytes, then a zero-filled tail (a preallocated file cut short).
        case "zero-tail": "{ head -c \(prefix - 4096) '\(source)'; head -c 4096 /dev/zero; } > '\(target)'"
        default: "printf 'not the file' > '\(target)'"
        }
        #expect(try TestProcess.run("/bin/sh", ["-c", make]).status == 0)
        let before = try Checksums.sha256sum(target)
        let refused = try runCLI(["--continue"] + arguments)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("is not the start of") && refused.stderr.contains("--overwrite"), "\(refused.stderr)")
        #expect(try Checksums.sha256sum(target) == before)
        #expect(!out.exists("data.bin.part") && !out.exists("data.bin.part.rfjournal"))
        let replaced = try runCLI(["--overwrite"] + arguments)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
    }

    @Test func untrustworthyLeftoversStartOverWithAWarning() throws {
        // A partial file larger than the remote, with no journal.
        let junk = try TestProcess.run("/bin/sh", ["-c", "head -c \(Self.size + 4096) /dev/urandom > '\(target).part'"])
        #expect(junk.status == 0)
        let first = try runCLI(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("no journal"), "\(first.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        // A journal that fails its checksum.
        try FileManager.default.removeItem(atPath: target)
        try killAt(fraction: 0.3)
        let journal = out.file("data.bin.part.rfjournal")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: journal))
        bytes[bytes.count - 3] ^= 0x20
        try bytes.write(to: URL(fileURLWithPath: journal))
        let second = try runCLI(arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("checksum"), "\(second.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
    }

    @Test func journalForAnotherURLIsNotMerged() throws {
        let other = try www.randomFile("other.bin", size: Self.size)
        let run = try RunningCLI([nginx.baseURL + "/slow/other.bin", "-o", target, "-n", "4", "--min-segment", "16M"])
        #expect(run.waitUntilReceived(Self.size / 4))
        run.send(SIGKILL)
        _ = try run.wait()
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("belongs to a download of"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        #expect(try Checksums.sha256sum(target) != Checksums.sha256sum(other))
    }
}

/// Copies a file byte for byte (test set-up only).
func copyfile(_ from: String, _ to: String) -> Bool {
    (try? FileManager.default.copyItem(atPath: from, toPath: to)) != nil
}
