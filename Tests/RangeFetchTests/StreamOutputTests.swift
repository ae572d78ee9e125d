import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Outputs that are not regular files: standard output (`-o -`), pipes, FIFOs, devices, and
/// symbolic links, against the test nginx.
@Suite(.serialized)
final class StreamOutputTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    /// Runs `script` with `$RF` set to the rangefetch binary, in the output directory.
    private func shell(_ script: String) throws -> TestProcess.Result {
        try TestProcess.run("/bin/bash", ["-c", "cd '\(out.path)' && set -o pipefail && " + script],
                            environment: ["RF": try TestProcess.rangefetchBinary])
    }

    @Test(arguments: ["", "/norange"])
    func standardOutputGetsTheBytesInOrderAndNoFileIsWritten(prefix: String) throws {
        let source = try www.randomFile("s.bin", size: 24 << 20)
        // A small window makes connections wait for the reader again and again.
        let result = try shell("\"$RF\" \(nginx.baseURL)\(prefix)/s.bin -o - -n 8 --stream-window 2M --print-digest sha256 | sha256sum")
        #expect(result.status == 0, "\(result.stderr)")
        let digest = try Checksums.sha256sum(source)
        #expect(result.stdout.hasPrefix(digest), "\(result.stdout)")
        // --print-digest goes to stderr: stdout carries the file alone.
        #expect(result.stderr.contains("\(digest)  -"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
        let requests = nginx.accessLog().filter { $0.path.hasSuffix("/s.bin") && $0.method == "GET" }
        if prefix.isEmpty {
            #expect(requests.filter { $0.status == 206 }.count >= 12, "ranges: \(requests.count)")
        } else {
            #expect(requests.contains { $0.status == 200 })
        }
    }

    @Test func devStdoutIsThePipeNotAFileBesideIt() throws {
        let source = try www.randomFile("d.bin", size: 5 << 20)
        let result = try shell("\"$RF\" \(nginx.baseURL)/d.bin -o /dev/stdout -n 4 --overwrite | sha256sum")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(try Checksums.sha256sum(source)), "\(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: "/dev/stdout.part"))
    }

    @Test func jsonEventsGoToStandardErrorWhenTheFileGoesToStandardOutput() throws {
        let source = try www.randomFile("j.bin", size: 3 << 20)
        let result = try shell("\"$RF\" \(nginx.baseURL)/j.bin -o - -n 3 --json 2>events.json | sha256sum; cat events.json >&2; rm events.json")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(try Checksums.sha256sum(source)))
        let finish = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(finish.contains("\"event\":\"finish\"") && finish.contains("standard output"), "\(finish)")
    }

    /// A reader that stops reading holds the download back: no more than the window (and the
    /// pieces in flight) arrives beyond what it took, and when it goes away the download stops
    /// with a message saying so.
    @Test func aReaderThatStopsHoldsTheDownloadBackAndItsGoingAwayStopsIt() throws {
        let size: Int64 = 48 << 20
        try www.randomFile("w.bin", size: size)
        let reader = "python3 -c 'import sys,time; sys.stdin.buffer.read(1<<20); time.sleep(2)'"
        let result = try shell("\"$RF\" \(nginx.baseURL)/w.bin -o - -n 4 --stream-window 2M --json 2>events.json | \(reader); status=${PIPESTATUS[0]}; cat events.json >&2; exit $status")
        #expect(result.status == 4, "\(result.stderr.suffix(400))")
        let received = result.stderr.split(separator: "\n").compactMap { line -> Int64? in
            guard line.contains("\"event\":\"progress\""), let range = line.range(of: "\"received_bytes\":") else { return nil }
            return Int64(line[range.upperBound...].prefix { $0.isNumber })
        }
        // 1 MiB read + a pipe's buffer + the 2 MiB window + 4 pieces of 1 MiB in flight.
        let bound: Int64 = (1 << 20) + (1 << 20) + (2 << 20) + 4 * (1 << 20)
        #expect(!received.isEmpty)
        #expect((received.max() ?? 0) <= bound, "received \(received.max() ?? 0) of \(size) while the reader slept")
        #expect(result.stderr.contains("the reader of standard output closed it after"), "\(result.stderr.suffix(400))")
    }

    @Test func aChecksumMismatchOnAStreamExitsFiveAndSaysTheReaderHasTheBytes() throws {
        try www.randomFile("c.bin", size: 2 << 20)
        let wrong = String(repeating: "0", count: 64)
        let result = try shell("\"$RF\" \(nginx.baseURL)/c.bin -o - --checksum sha256=\(wrong) | wc -c")
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(2 << 20)")
        #expect(result.stderr.contains("already received"), "\(result.stderr)")
    }

    @Test func devNullStaysADeviceAndTheDigestIsOfTheBytes() throws {
        let source = try www.randomFile("n.bin", size: 6 << 20)
        let result = try runCLI([nginx.baseURL + "/n.bin", "-o", "/dev/null", "-n", "4", "--overwrite",
                                 "--print-digest", "sha256"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(try Checksums.sha256sum(source)), "\(result.stdout)")
        var info = stat()
        #expect(stat("/dev/null", &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFCHR, "/dev/null is no longer a character device")
        #expect(!FileManager.default.fileExists(atPath: "/dev/null.part"))
    }

    @Test func aFIFOIsWrittenIntoAndStaysAFIFO() throws {
        let source = try www.randomFile("p.bin", size: 8 << 20)
        let result = try shell("mkfifo pipe && (sha256sum < pipe > digest &) && \"$RF\" \(nginx.baseURL)/p.bin -o pipe -n 4 && sleep 0.2 && cat digest && test -p pipe")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(try Checksums.sha256sum(source)), "\(result.stdout)")
    }

    @Test func aSymbolicLinkIsFollowedNeverReplaced() throws {
        let source = try www.randomFile("l.bin", size: 3 << 20)
        let digest = try Checksums.sha256sum(source)
        let manager = FileManager.default
        try manager.createDirectory(atPath: out.file("real"), withIntermediateDirectories: true)
        try Data("old".utf8).write(to: URL(fileURLWithPath: out.file("real/target.bin")))
        try manager.createSymbolicLink(atPath: out.file("link.bin"), withDestinationPath: "real/target.bin")
        let replaced = try runCLI([nginx.baseURL + "/l.bin", "-o", out.file("link.bin"), "--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try manager.destinationOfSymbolicLink(atPath: out.file("link.bin")) == "real/target.bin")
        #expect(try Checksums.sha256sum(out.file("real/target.bin")) == digest)
        // Without --overwrite the file the link names is protected like any other.
        try Data("old".utf8).write(to: URL(fileURLWithPath: out.file("real/target.bin")))
        let refused = try runCLI([nginx.baseURL + "/l.bin", "-o", out.file("link.bin")])
        #expect(refused.status != 0 && refused.stderr.contains("already exists"), "\(refused.stderr)")
        #expect(try manager.destinationOfSymbolicLink(atPath: out.file("link.bin")) == "real/target.bin")
        // A dangling link names the file to create.
        try manager.createSymbolicLink(atPath: out.file("dangling.bin"), withDestinationPath: out.file("real/new.bin"))
        let created = try runCLI([nginx.baseURL + "/l.bin", "-o", out.file("dangling.bin")])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try manager.destinationOfSymbolicLink(atPath: out.file("dangling.bin")) == out.file("real/new.bin"))
        #expect(try Checksums.sha256sum(out.file("real/new.bin")) == digest)
    }
}
