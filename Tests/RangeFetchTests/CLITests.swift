import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The built `rangefetch` binary: arguments, exit codes, output formats.
@Suite(.serialized)
final class CLITests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    @Test func helpTeachesEveryOptionWithExamples() throws {
        let result = try runCLI(["get", "--help"])
        #expect(result.status == 0)
        for option in ["--output", "--dir", "--connections", "--min-segment", "--json", "--quiet", "--checksum",
                       "--checksum-file", "--restart", "--overwrite", "--continue", "--header", "--user",
                       "--max-speed", "--max-tries", "--retry-wait", "--insecure", "--cacert", "--connect-timeout"] {
            #expect(result.stdout.contains(option), "help lacks \(option)")
        }
        #expect(result.stdout.contains("Example"))
        let top = try runCLI(["--help"])
        #expect(top.status == 0)
        #expect(top.stdout.contains("Exit codes"))
        // The plain help teaches the default command's common flags too.
        for option in ["-o PATH", "-n N|auto", "--continue", "--checksum", "-i LIST", "--limit-rate", "--proxy"] {
            #expect(top.stdout.contains(option), "rangefetch --help lacks \(option)")
        }
    }

    static let usageErrors: [([String], String)] = [
        ([], "url"),
        (["-n", "0", "http://127.0.0.1/x"], "between 1 and 64"),
        (["-n", "65", "http://127.0.0.1/x"], "between 1 and 64"),
        (["--min-segment", "lots", "http://127.0.0.1/x"], "--min-segment"),
        (["--min-segment", "4K", "http://127.0.0.1/x"], "'--min-segment <size>': expected a size of at least 16K"),
        (["-n", "many", "http://127.0.0.1/x"], "expected 'auto' or a number"),
        (["--stream-window", "5K", "-o", "-", "http://127.0.0.1/x"], "'--stream-window <size>': expected a size of at least 1M"),
        (["--speed-limit", "fast", "http://127.0.0.1/x"], "'--speed-limit <rate>': expected a rate like 1K, or 0 for none"),
        (["--print-digest", "crc16", "http://127.0.0.1/x"], "expected sha256, sha512, sha1, md5, crc32, crc32c or crc64nvme"),
        (["-x", "99", "http://127.0.0.1/x"], "between 1 and 64, or a proxy URL"),
        (["--max-connections", "65", "http://127.0.0.1/x"], "--max-connections must be between 1 and 64"),
        (["--max-connections", "0", "-i", "/dev/null"], "between 1 and 1024 for a batch"),
        (["--shard", "2/2", "-i", "/dev/null"], "0 <= K < N"),
        (["--max-connections-per-host", "2000", "-i", "/dev/null"], "between 1 and 1024"),
        (["--checksum", "sha256=zz", "http://127.0.0.1/x"], "64 hex digits"),
        (["--checksum", "crc=00", "http://127.0.0.1/x"], "not supported"),
        (["-o", "/a", "-d", "b", "http://127.0.0.1/x"], "absolute path"),
        (["-o", "-", "-d", "b", "http://127.0.0.1/x"], "-d DIR does not apply"),
        (["--max-speed", "-5", "http://127.0.0.1/x"], "--max-speed"),
        (["ftp://127.0.0.1/x"], "unsupported scheme"),
        (["127.0.0.1/x"], "not a URL"),
        (["http://[::1/x"], "malformed"),
        (["-H", "Authorization Bearer s3cr3tt0ken", "http://127.0.0.1/x"], "'Authorization …'"),
        (["-H", "X-A: 1\r\nX-Injected: 2", "http://127.0.0.1/x"], "line break"),
        (["--proxy-header", "X-Tag: 1\r\nX-Injected: 2", "http://127.0.0.1/x"], "--proxy-header a header line cannot contain a line break"),
        (["--proxy-header", "Proxy-Authorization Basic s3cr3tt0ken", "http://127.0.0.1/x"], "--proxy-header takes 'Name: value' (got 'Proxy-Authorization …')"),
    ]

    @Test(arguments: usageErrors)
    func badInputIsAUsageErrorNamingTheProblem(arguments: [String], fragment: String) throws {
        let result = try runCLI(arguments + ["-d", out.path].filter { _ in !arguments.contains("-o") && !arguments.isEmpty })
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.lowercased().contains(fragment.lowercased()), "\(arguments): \(result.stderr)")
        #expect(!result.stderr.contains("s3cr3t"), "a usage error repeats a header's secret: \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
    }

    @Test func unreachableServerIsANetworkError() throws {
        let port = try freeLoopbackPort()
        let result = try runCLI(["http://127.0.0.1:\(port)/x", "-d", out.path, "--max-tries", "1"])
        #expect(result.status == 3)
        #expect(result.stderr.contains("could not connect"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func fileSystemProblemsExitFourBeforeAnyTransfer() throws {
        try www.randomFile("f.bin", size: 1000)
        let url = nginx.baseURL + "/f.bin"
        try Data("x".utf8).write(to: URL(fileURLWithPath: out.file("plain")))
        let underFile = try runCLI([url, "-d", out.file("plain/sub")])
        #expect(underFile.status == 4)
        #expect(underFile.stderr.contains("plain is a file, not a directory"), "\(underFile.stderr)")
        let directory = try runCLI([url, "-o", out.path])
        #expect(directory.status == 4)
        #expect(directory.stderr.contains("is a directory"))
        let parentIsFile = try runCLI([url, "-o", out.file("plain/f.bin")])
        #expect(parentIsFile.status == 4)
        #expect(nginx.accessLog().isEmpty)
    }

    /// `-d` and `-o` create missing directories, as aria2c and wget2 do.
    @Test func missingDirectoriesAreCreated() throws {
        let source = try www.randomFile("m.bin", size: 1000)
        let intoDirectory = try runCLI([nginx.baseURL + "/m.bin", "-d", out.file("new/sub")])
        #expect(intoDirectory.status == 0, "\(intoDirectory.stderr)")
        #expect(try Checksums.sha256sum(out.file("new/sub/m.bin")) == Checksums.sha256sum(source))
        let asFile = try runCLI([nginx.baseURL + "/m.bin", "-o", out.file("other/deeper/m.bin")])
        #expect(asFile.status == 0, "\(asFile.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: out.file("other/deeper"))[.posixPermissions] as? Int
        #expect(mode == 0o777 & ~Int(FileSystem.umask), "directory mode \(String(mode ?? 0, radix: 8))")
    }

    @Test func jsonModePrintsOneObjectPerLine() throws {
        let source = try www.randomFile("j.bin", size: 3 << 20)
        let result = try runCLI(["--json", nginx.baseURL + "/j.bin", "-o", out.file("j.bin"), "-n", "3"])
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try result.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
        let events = objects.compactMap { $0["event"] as? String }
        #expect(events.first == "probed")
        #expect(events.contains("start"))
        #expect(events.contains("progress"))
        #expect(events.last == "finish")
        #expect(objects.last?["bytes"] as? Int == 3 << 20)
        #expect(try Checksums.sha256sum(out.file("j.bin")) == Checksums.sha256sum(source))
    }

    @Test func quietWhenNotATerminal() throws {
        try www.randomFile("q.bin", size: 1 << 20)
        let result = try runCLI([nginx.baseURL + "/q.bin", "-d", out.path])
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty && result.stderr.isEmpty)
    }

    @Test func errorsInJsonModeAreObjectsToo() throws {
        let result = try runCLI(["--json", nginx.baseURL + "/missing.bin", "-d", out.path])
        #expect(result.status == 3)
        #expect(result.stdout.contains("\"event\":\"error\""))
        #expect(result.stdout.contains("\"exit_code\":3"))
    }

    @Test func diskFullMidDownloadKeepsThePartialAndResumes() throws {
        let source = try www.randomFile("full.bin", size: 8 << 20)
        let args = [nginx.baseURL + "/full.bin", "-o", out.file("full.bin"), "-n", "4"]
        let failed = try runCLI(args, environment: ["RANGEFETCH_FAULT": "pwrite:\(ENOSPC)"])
        #expect(failed.status == 4)
        #expect(failed.stderr.contains("No space left on device"), "\(failed.stderr)")
        #expect(failed.stderr.contains("rerunning the same command resumes"))
        #expect(out.exists("full.bin.part") && out.exists("full.bin.part.rfjournal"))
        #expect(!out.exists("full.bin"))
        let resumed = try runCLI(args)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try Checksums.sha256sum(out.file("full.bin")) == Checksums.sha256sum(source))
    }

    @Test func aDeviceThatRefusesDirectWritesFallsBackOnEveryWriteLane() throws {
        let source = try www.randomFile("direct.bin", size: 64 << 20)
        let args = [nginx.baseURL + "/direct.bin", "-o", out.file("direct.bin"), "-n", "8", "--min-segment", "1M"]
        // Whole blocks really go through the O_DIRECT descriptor: an I/O error there says so.
        let failed = try runCLI(args, environment: ["RANGEFETCH_FAULT": "pwrite(O_DIRECT):\(EIO)"])
        #expect(failed.status == 4)
        #expect(failed.stderr.contains("pwrite(O_DIRECT)"), "\(failed.stderr)")
        // Both write lanes meet EINVAL on their direct writes at about the same moment: each
        // switches to the page cache, and neither writes through a closed (or reused) descriptor.
        let refused = try runCLI(args, environment: ["RANGEFETCH_FAULT": "pwrite(O_DIRECT):\(EINVAL)"])
        #expect(refused.status == 0, "\(refused.stderr)")
        #expect(try Checksums.sha256sum(out.file("direct.bin")) == Checksums.sha256sum(source))
    }

    @Test(.enabled(if: Tmpfs.available, "needs root and a mountable tmpfs (a 2 MiB disk)"))
    func fileLargerThanTheFreeSpaceIsRefusedUpFront() throws {
        let mountPoint = try Tmpfs(options: "size=2m")
        try www.randomFile("huge.bin", size: 8 << 20)
        let result = try runCLI([nginx.baseURL + "/huge.bin", "-d", mountPoint.path])
        #expect(result.status == 4)
        #expect(result.stderr.contains("not enough free space"), "\(result.stderr)")
        #expect(nginx.accessLog().filter { $0.method == "GET" }.isEmpty)
        // Nothing left behind: no empty huge.bin.part.
        #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint.path).isEmpty)
        withExtendedLifetime(mountPoint) {}
    }

    /// root ignores permission bits: as root the directory is a read-only mount instead.
    @Test(.enabled(if: geteuid() != 0 || Tmpfs.available, "as root, needs a mountable tmpfs (a read-only one)"))
    func readOnlyDirectoryIsRefused() throws {
        let scratch = try TemporaryDirectory("rf-ro")
        let mount = geteuid() == 0 ? try Tmpfs(options: "ro,size=1m") : nil
        if mount == nil { chmod(scratch.path, 0o555) }
        try www.randomFile("ro.bin", size: 1000)
        let result = try runCLI([nginx.baseURL + "/ro.bin", "-d", mount?.path ?? scratch.path])
        withExtendedLifetime(mount) {}
        #expect(result.status == 4)
        #expect(result.stderr.contains("not writable"), "\(result.stderr)")
    }

    @Test func maxSpeedCapsTheWholeDownload() throws {
        let source = try www.randomFile("capped.bin", size: 3 << 20)
        let start = Date()
        let result = try runCLI([nginx.baseURL + "/capped.bin", "-o", out.file("capped.bin"), "-n", "4",
                                 "--max-speed", "1M", "-A", "rangefetch-test/1", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        // 3 MiB at 1 MiB/s cannot take much under 3 s (libcurl averages, so allow a burst).
        #expect(Date().timeIntervalSince(start) >= 2)
        #expect(try Checksums.sha256sum(out.file("capped.bin")) == Checksums.sha256sum(source))
        // The cap pauses whichever connection asks when its budget is spent: one that looks slow
        // is waiting its turn, and is not replaced by a fresh one (which would wait too).
        #expect(!result.stdout.contains("took over"), "\(result.stdout)")
    }

    @Test func verifyChecksAndPrintsDigests() throws {
        let file = try out.randomFile("v.bin", size: (1 << 20) + 17)
        let sha = try Checksums.sha256sum(file)
        let md5 = try Checksums.md5sum(file)
        #expect(try runCLI(["verify", file, "--checksum", "sha256=\(sha.uppercased())"]).status == 0)
        #expect(try runCLI(["verify", file, "--checksum", "md5=\(md5)"]).status == 0)
        let wrong = try runCLI(["verify", file, "--checksum", "md5=\(String(md5.reversed()))"])
        #expect(wrong.status == 5)
        #expect(wrong.stderr.contains("expected") && wrong.stderr.contains(md5))
        let printed = try runCLI(["verify", file, "--print-digest", "sha256"])
        #expect(printed.stdout == "\(sha)  \(file)\n")
        try "\(md5)  other\n\(sha)  v.bin\n".write(toFile: out.file("SUMS"), atomically: true, encoding: .utf8)
        #expect(try runCLI(["verify", file, "--checksum-file", out.file("SUMS")]).status == 0)
        try "\(md5)  other\n".write(toFile: out.file("NOSUMS"), atomically: true, encoding: .utf8)
        let noEntry = try runCLI(["verify", file, "--checksum-file", out.file("NOSUMS")])
        #expect(noEntry.status == 2)
        #expect(noEntry.stderr.contains("no entry for v.bin"))
        #expect(try runCLI(["verify", out.file("absent"), "--print-digest", "md5"]).status == 4)
    }

    /// sha256sum's habits: several files at once, and every entry of a checksum file checked
    /// (names read from the current directory; here absolute), the others checked after a failure.
    @Test func verifyChecksSeveralFilesAndEveryEntryOfAChecksumFile() throws {
        let a = try out.randomFile("a.bin", size: 1000), b = try out.randomFile("b.bin", size: 5000)
        let sums = out.file("SHA256SUMS")
        try "\(try Checksums.sha256sum(a))  \(a)\n\(try Checksums.sha256sum(b)) *\(b)\n".write(toFile: sums, atomically: true, encoding: .utf8)
        let every = try runCLI(["verify", "--checksum-file", sums])
        #expect(every.status == 0, "\(every.stderr)")
        #expect(every.stdout == "\(a): sha256 OK\n\(b): sha256 OK\n", "\(every.stdout)")
        let both = try runCLI(["verify", a, b, "--checksum-file", sums])
        #expect(both.status == 0 && both.stdout.split(separator: "\n").count == 2, "\(both.stdout) \(both.stderr)")
        let printed = try runCLI(["verify", a, b, "--print-digest", "sha256"])
        #expect(printed.stdout == "\(try Checksums.sha256sum(a))  \(a)\n\(try Checksums.sha256sum(b))  \(b)\n")
        // A changed first file fails; the second is still checked.
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: a))
        let changed = try runCLI(["verify", "--checksum-file", sums])
        #expect(changed.status == 5, "\(changed.stderr)")
        #expect(changed.stdout == "\(b): sha256 OK\n" && changed.stderr.contains("1 of 2 files"), "\(changed.stdout) \(changed.stderr)")
        #expect(try runCLI(["verify", a, b, "--checksum", "sha256=\(String(repeating: "0", count: 64))"]).status == 2)
        #expect(try runCLI(["verify"]).status == 2)
    }

    @Test func emptyFileDigestsMatchCoreutils() throws {
        let file = out.file("empty")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let printed = try runCLI(["verify", file, "--print-digest", "md5"])
        #expect(printed.stdout.hasPrefix(try Checksums.md5sum(file)))
    }

    @Test func downloadWithChecksumFileAndPrintDigest() throws {
        let source = try www.randomFile("c.bin", size: 2 << 20)
        let sha = try Checksums.sha256sum(source)
        try "\(sha)  c.bin\n".write(toFile: out.file("SHA256SUMS"), atomically: true, encoding: .utf8)
        let result = try runCLI([nginx.baseURL + "/c.bin", "-d", out.path, "--checksum-file", out.file("SHA256SUMS"),
                                 "--print-digest", "sha256"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "\(sha)  \(out.file("c.bin"))\n")
        let mismatch = try runCLI([nginx.baseURL + "/c.bin", "-o", out.file("c2.bin"), "--checksum", "sha-256=\(String(repeating: "0", count: 64))"])
        #expect(mismatch.status == 5)
        #expect(!out.exists("c2.bin"))
    }
}
