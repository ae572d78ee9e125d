import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `rangefetch verify FILE --metalink F.meta4 [--repair]` against the fault server: only the bad
/// pieces are fetched (counted at the server), a lying source never gets its bytes into the
/// file, a file of the wrong size is left alone, and `--repair` needs `--metalink`.
@Suite(.serialized)
final class MetalinkRepairTests {
    let out: TemporaryDirectory
    static let size: Int64 = 16 << 20
    static let piece = MetalinkDownloadTests.pieceBytes

    init() throws {
        out = try TemporaryDirectory()
    }

    /// The exact bytes of a `/data/SIZE` resource and its digests, from a server stopped at once
    /// (so the servers under test count only what the repair asks for).
    static func reference(size: Int64) throws -> (bytes: Data, whole: String, pieces: [String]) {
        let server = try FaultServer()
        defer { server.stop() }
        let bytes = try server.expectedBytes(size: size)
        let (whole, pieces) = MetalinkDownloadTests.digests(of: bytes)
        return (bytes, whole, pieces)
    }

    /// `bytes` with the 1 MiB pieces `indices` overwritten by other bytes, written to `name`.
    func corruptedCopy(_ bytes: Data, pieces indices: [Int], as name: String) throws -> (path: String, bytes: Data) {
        var copy = bytes
        for index in indices {
            let start = index * Self.piece
            copy.replaceSubrange(start..<start + Self.piece, with: Data(repeating: UInt8(index), count: Self.piece))
        }
        let path = out.file(name)
        try copy.write(to: URL(fileURLWithPath: path))
        return (path, copy)
    }

    func metalink(_ reference: (bytes: Data, whole: String, pieces: [String]), size: Int64, urls: [String]) throws -> String {
        let path = out.file("f.meta4")
        try MetalinkDownloadTests.metalink(name: "f.bin", size: size, sha256: reference.whole, pieces: reference.pieces, urls: urls)
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func contents(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// The issue's case: three corrupted 1 MiB regions of a 16 MiB file are fetched again, and
    /// nothing else: the server sent at most 3 MiB plus its probe's bytes, and the file is exact.
    @Test func threeCorruptedPiecesAreRepairedFetchingOnlyThem() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin")])
        let (path, _) = try corruptedCopy(reference.bytes, pieces: [2, 7, 13], as: "f.bin")
        let result = try runCLI(["verify", path, "--metalink", meta, "--repair"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("repaired 3 piece(s) (2, 7, 13)") && result.stdout.contains("all 16 pieces OK")
                && result.stdout.contains("sha256 OK"), "\(result.stdout)")
        let same = try contents(path) == reference.bytes
        #expect(same, "the repaired file is not exact")
        let stats = try server.stats()
        let log = stats.log.map { "\($0.method) \($0.range ?? "-") \($0.status) \($0.bytes)" }
        #expect(stats.body_bytes <= 3 * Int64(Self.piece) + 4096, "the server sent \(stats.body_bytes) bytes to repair 3 MiB: \(log)")
        #expect(stats.log.filter { $0.status == 206 }.allSatisfy { $0.if_range != nil }, "a range was asked without If-Range: \(log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted() == ["f.bin", "f.meta4"])
    }

    /// Without --repair the bad pieces are listed (count and byte ranges), exit 5, nothing is
    /// fetched and the file is unchanged.
    @Test func verifyAloneReportsTheBadPiecesAndChangesNothing() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin")])
        let (path, corrupted) = try corruptedCopy(reference.bytes, pieces: [2, 7, 13], as: "f.bin")
        let result = try runCLI(["verify", path, "--metalink", meta])
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("3 of 16 pieces do not match the metalink's piece digests")
                && result.stderr.contains("2 (bytes 2097152-3145727), 7 (bytes 7340032-8388607), 13 (bytes 13631488-14680063)"),
                "\(result.stderr)")
        let unchanged = try contents(path) == corrupted
        #expect(unchanged)
        #expect(try server.stats().requests == 0)
    }

    /// A source that corrupts everything it sends: its bytes never reach the file; the command
    /// exits 5 naming the piece, and every other piece is as it was.
    @Test func aSourceThatKeepsSendingBadBytesFailsNamingThePiece() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin", "corruptevery=1")])
        let (path, corrupted) = try corruptedCopy(reference.bytes, pieces: [5], as: "f.bin")
        let result = try runCLI(["verify", path, "--metalink", meta, "--repair"])
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("1 of 16 pieces do not match the metalink's piece digests after trying each of its 1 URL(s): 5 (bytes 5242880-6291455)"),
                "\(result.stderr)")
        let unchanged = try contents(path) == corrupted
        #expect(unchanged, "bytes of the lying source were written into the file")
        #expect(try server.stats().log.contains { $0.status == 206 })
    }

    /// A lying source first, a good one second: the piece the first corrupts is taken from the
    /// second, and the first is named in a warning.
    @Test func aPieceALyingSourceCorruptsComesFromTheNextSource() throws {
        let reference = try Self.reference(size: Self.size)
        let servers = try (0..<2).map { _ in try FaultServer() }
        defer { servers.forEach { $0.stop() } }
        let lying = servers[0].dataURL(size: Self.size, name: "f.bin", "corruptevery=1")
        let meta = try metalink(reference, size: Self.size, urls: [lying, servers[1].dataURL(size: Self.size, name: "f.bin")])
        let (path, _) = try corruptedCopy(reference.bytes, pieces: [0, 15], as: "f.bin")
        let result = try runCLI(["verify", path, "--metalink", meta, "--repair"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("\(lying): piece 0 (bytes 0-1048575) does not match"), "\(result.stderr)")
        let same = try contents(path) == reference.bytes
        #expect(same, "the repaired file is not exact")
    }

    /// A file of another size than the metalink's is not repaired: a clear error, exit 5,
    /// nothing fetched, the file untouched.
    @Test func aFileOfTheWrongSizeIsLeftAlone() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin")])
        let path = out.file("f.bin")
        let short = reference.bytes.prefix(Int(Self.size) - 100)
        try short.write(to: URL(fileURLWithPath: path))
        let result = try runCLI(["verify", path, "--metalink", meta, "--repair"])
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("is \(Self.size - 100) bytes, not the \(Self.size) bytes the metalink describes")
                && result.stderr.contains("download it again"), "\(result.stderr)")
        let unchanged = try contents(path) == short
        #expect(unchanged)
        #expect(try server.stats().requests == 0)
    }

    /// A source that serves another size, then one that does not serve ranges: neither is used
    /// and each is named; with no other source the bad piece stays as it was (exit 5).
    @Test func sourcesOfTheWrongSizeOrWithoutRangesAreNotUsed() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let wrongSize = server.dataURL(size: Self.size + 1, name: "f.bin")
        let noRanges = server.dataURL(size: Self.size, name: "f.bin", "norange=1")
        let meta = try metalink(reference, size: Self.size, urls: [wrongSize, noRanges])
        let (path, corrupted) = try corruptedCopy(reference.bytes, pieces: [3], as: "f.bin")
        let result = try runCLI(["verify", path, "--metalink", meta, "--repair"])
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("\(wrongSize) serves \(Self.size + 1) bytes, not the \(Self.size) bytes the metalink describes")
                && result.stderr.contains("\(noRanges) does not serve byte ranges") && result.stderr.contains("3 (bytes 3145728-4194303)"),
                "\(result.stderr)")
        let unchanged = try contents(path) == corrupted
        #expect(unchanged)
        #expect(try server.stats().log.allSatisfy { $0.method == "HEAD" || $0.range == nil })
    }

    /// Every piece matches but the whole-file hash does not (a wrong metalink): exit 5 naming
    /// the hash, nothing fetched.
    @Test func aWholeFileHashMismatchIsReported() throws {
        var reference = try Self.reference(size: Self.size)
        reference.whole = String(repeating: "0", count: 64)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin")])
        let path = out.file("f.bin")
        try reference.bytes.write(to: URL(fileURLWithPath: path))
        let result = try runCLI(["verify", path, "--metalink", meta, "--repair"])
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("sha256 mismatch (the metalink's <hash>)"), "\(result.stderr)")
        #expect(try server.stats().requests == 0)
    }

    /// A file another process holds the lock of (as a running rangefetch holds its .part's), or
    /// whose .part a running download holds, is not repaired.
    @Test func aLockedFileIsNotRepaired() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin")])
        let (path, corrupted) = try corruptedCopy(reference.bytes, pieces: [1], as: "f.bin")
        for locked in [path, path + ".part"] {
            if locked.hasSuffix(".part") { try Data([1]).write(to: URL(fileURLWithPath: locked)) }
            // Held by this process, as a running download holds its lock: the CLI is another process.
            let holder = open(locked, O_RDONLY | O_CLOEXEC)
            #expect(holder >= 0 && flock(holder, LOCK_EX | LOCK_NB) == 0)
            defer { close(holder) }
            let result = try runCLI(["verify", path, "--metalink", meta, "--repair"])
            #expect(result.status == 4, "\(result.stderr)")
            #expect(result.stderr.contains("another rangefetch process") && result.stderr.contains("not repaired"), "\(result.stderr)")
            let unchanged = try contents(path) == corrupted
            #expect(unchanged)
        }
        #expect(try server.stats().requests == 0)
    }

    /// A symbolic link to another user's file is followed to check it, but never written
    /// through: the repair is refused and the file is unchanged; named itself, it is repaired.
    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func aLinkToAnotherUsersFileIsNotWrittenThrough() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin")])
        let (path, corrupted) = try corruptedCopy(reference.bytes, pieces: [4], as: "theirs.bin")
        #expect(chown(path, 65534, 65534) == 0)
        let link = out.file("f.bin")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        let checked = try runCLI(["verify", link, "--metalink", meta])
        #expect(checked.status == 5 && checked.stderr.contains("1 of 16 pieces do not match"), "\(checked.stderr)")
        let result = try runCLI(["verify", link, "--metalink", meta, "--repair"])
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("is a symbolic link to a file owned by uid 65534"), "\(result.stderr)")
        let unchanged = try contents(path) == corrupted
        #expect(unchanged)
        #expect(try server.stats().requests == 0)
        // Named itself (root may write another user's file it names), it is repaired.
        let direct = try runCLI(["verify", path, "--metalink", meta, "--repair"])
        #expect(direct.status == 0, "\(direct.stderr)")
        let same = try contents(path) == reference.bytes
        #expect(same)
    }

    /// Ctrl-C while the pieces trickle in: exit 130 at once, saying so; no piece that had not
    /// arrived whole and matched was written, so the file is as it was.
    @Test func anInterruptedRepairLeavesTheFileAsItWas() throws {
        let reference = try Self.reference(size: Self.size)
        let server = try FaultServer()
        defer { server.stop() }
        let meta = try metalink(reference, size: Self.size, urls: [server.dataURL(size: Self.size, name: "f.bin", "rate=100000")])
        let (path, corrupted) = try corruptedCopy(reference.bytes, pieces: [1, 9], as: "f.bin")
        let process = Process()
        let (_, errors) = try TestProcess.launch(process, try TestProcess.rangefetchBinary, ["verify", path, "--metalink", meta, "--repair"], environment: [:])
        Thread.sleep(forTimeInterval: 1.5)
        let sent = Date()
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(Date().timeIntervalSince(sent) < 5)
        let status = process.terminationStatus
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status == 130, "\(stderr)")
        #expect(stderr.contains("interrupted while repairing"), "\(stderr)")
        let unchanged = try contents(path) == corrupted
        #expect(unchanged)
    }

    /// A FIFO under the name is not read or written (and does not hang the open): exit 4.
    @Test func aFIFOIsNeitherCheckedNorRepaired() throws {
        let meta = try metalink((Data(), String(repeating: "0", count: 64), [String(repeating: "0", count: 64)]), size: 100,
                                urls: ["http://127.0.0.1:9/f.bin"])
        let path = out.file("f.bin")
        #expect(mkfifo(path, 0o600) == 0)
        for repair in [false, true] {
            let result = try runCLI(["verify", path, "--metalink", meta] + (repair ? ["--repair"] : []), timeoutSeconds: 20)
            #expect(result.status == 4, "\(result.stderr)")
            #expect(result.stderr.contains("\(path) is not a regular file"), "\(result.stderr)")
        }
    }

    /// `--repair` without `--metalink` is a usage error.
    @Test func repairWithoutAMetalinkIsAUsageError() throws {
        let path = try out.randomFile("r.bin", size: 1000)
        let result = try runCLI(["verify", path, "--repair"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--repair needs --metalink"), "\(result.stderr)")
    }

    /// Whether a file can be checked and repaired, decided before anything is read or fetched.
    @Test(arguments: [
        // (file size, metalink size, pieces' length (0: none), whole hash, repair, expected error text or nil)
        (Int64(100), Int64?(100), Int64(40), true, true, String?.none),
        (100, 100, 0, true, false, nil),
        (100, 100, 0, true, true, "has no piece digests"),
        (100, 100, 0, false, false, "neither a whole-file <hash> nor <pieces>"),
        (99, 100, 40, true, true, "not the 100 bytes the metalink describes"),
        (100, nil, 0, true, false, "gives no <size>"),
        (Int64(100) << 20, Int64(100) << 20, Int64(65) << 20, true, true, "over the 64 MiB a repair fetches at once"),
        (Int64(100) << 20, Int64(100) << 20, Int64(65) << 20, true, false, nil),
    ])
    func whetherAFileCanBeChecked(_ fileSize: Int64, _ size: Int64?, _ pieceLength: Int64, _ whole: Bool,
                                  _ repair: Bool, _ expected: String?) {
        let digest = DigestValue(algorithm: .sha256, hex: String(repeating: "0", count: 64))!
        let pieces = pieceLength == 0 || size == nil ? nil
            : Metalink.Pieces(length: pieceLength, digests: Array(repeating: digest, count: Int((size! - 1) / pieceLength + 1)))
        let metalink = Metalink(name: "f.bin", size: size, digests: whole ? [digest] : [], pieces: pieces,
                                locations: [.init(url: "http://127.0.0.1:9/f.bin", priority: 1)], ignored: [])
        let problem = MetalinkFileCheck.problem(path: "f.bin", fileSize: fileSize, metalink: metalink, repair: repair)
        if let expected {
            #expect(problem?.message.contains(expected) == true, "\(problem?.message ?? "no problem")")
        } else {
            #expect(problem == nil, "\(problem?.message ?? "")")
        }
    }
}
