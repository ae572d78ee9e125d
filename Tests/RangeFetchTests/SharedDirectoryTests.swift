import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Downloads into a directory others can write to (01777, like /tmp): whatever another user
/// (`nobody`) puts under the names rangefetch uses is never followed, adopted or overwritten.
/// The kernel's own protection (`fs.protected_symlinks`) would refuse some of these links to
/// root in a sticky directory, but with an EACCES of its own: each test checks OUR message, and
/// the file the link points to is in root's own directory, out of nobody's reach.
@Suite(.serialized, .enabled(if: SharedDirectory.canPlant, "needs root and setpriv to plant files as nobody"))
final class SharedDirectoryTests {
    let server: FaultServer
    let shared: SharedDirectory
    /// Root's own directory (0755): the files planted links point to.
    let safe: TemporaryDirectory
    /// Large enough to keep a journal (``DownloadSession/smallFileBytes``).
    static let size: Int64 = 4 << 20

    init() throws {
        server = try FaultServer()
        shared = try SharedDirectory()
        safe = try TemporaryDirectory("rf-safe")
    }

    deinit { server.stop() }

    /// A file of root's, mode 0600, that no download may touch.
    private func victim() throws -> String {
        let path = safe.file("victim.txt")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return path
    }

    private func expectUntouched(_ victim: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == Data("precious".utf8), sourceLocation: sourceLocation)
        #expect(SharedDirectory.entry(victim).map { $0.st_mode & 0o7777 } == 0o600, sourceLocation: sourceLocation)
    }

    @Test func aLinkPlantedAsThePartialFileIsRefusedAndWhatItPointsToIsUntouched() throws {
        let victim = try victim()
        try shared.asNobody("ln -s '\(victim)' data.bin.part")
        // With credentials the partial file would be made private, then given the usual mode.
        let url = server.dataURL(size: Self.size, "auth=alice:s3cret").replacingOccurrences(of: "http://", with: "http://alice:s3cret@")
        let result = try runCLI([url, "-o", shared.file("data.bin")])
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("data.bin.part is a symbolic link, so it is not used as the partial download"), "\(result.stderr)")
        try expectUntouched(victim)
        #expect(SharedDirectory.entry(shared.file("data.bin.part")).map { $0.st_mode & S_IFMT } == S_IFLNK)
        #expect(SharedDirectory.entry(shared.file("data.bin")) == nil)
    }

    @Test func aLinkPlantedAsTheJournalsTemporaryFileIsRemovedNotFollowed() throws {
        let victim = try victim()
        try shared.asNobody("ln -s '\(victim)' data.bin.part.rfjournal.tmp")
        let target = shared.file("data.bin")
        let result = try runCLI([server.dataURL(size: Self.size), "-o", target])
        #expect(result.status == 0, "\(result.stderr)")
        try expectUntouched(victim)
        try server.expectFile(target, size: Self.size, sourceLocation: #_sourceLocation)
        #expect(SharedDirectory.entry(target)?.st_uid == 0)
        #expect(SharedDirectory.entry(shared.file("data.bin.part.rfjournal.tmp")) == nil)
    }

    @Test func aDanglingLinkAtTheServersNameIsAnErrorAndNothingIsCreatedWhereItPoints() throws {
        let pointed = safe.file("made-through-a-link.bin")
        try shared.asNobody("ln -s '\(pointed)' data.bin")
        let result = try runCLI([server.dataURL(size: Self.size), "-d", shared.path])
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("data.bin is a symbolic link; a link is followed only at a path given as the output file"), "\(result.stderr)")
        #expect(SharedDirectory.entry(pointed) == nil)
        #expect(SharedDirectory.entry(shared.file("data.bin")).map { $0.st_mode & S_IFMT } == S_IFLNK)
        #expect(SharedDirectory.entry(shared.file("data.bin.part")) == nil)
    }

    @Test func aLinkAtAListsOutNameIsAnErrorAndNothingIsCreatedWhereItPoints() throws {
        let pointed = safe.file("made-through-a-list.bin")
        try shared.asNobody("ln -s '\(pointed)' renamed.bin")
        let list = safe.file("list.txt")
        try "\(server.dataURL(size: Self.size))\n  out=renamed.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let result = try runCLI(["-i", list, "-d", shared.path])
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("renamed.bin is a symbolic link"), "\(result.stderr)")
        #expect(SharedDirectory.entry(pointed) == nil)
        #expect(SharedDirectory.entry(shared.file("renamed.bin.part")) == nil)
    }

    @Test func anotherUsersLinkAtTheTypedOutputPathIsNotFollowedButOursIs() throws {
        let victim = try victim()
        try shared.asNobody("ln -s '\(victim)' typed.bin")
        let refused = try runCLI([server.dataURL(size: Self.size), "-o", shared.file("typed.bin"), "--overwrite"])
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("typed.bin is a symbolic link owned by uid 65534"), "\(refused.stderr)")
        try expectUntouched(victim)
        #expect(SharedDirectory.entry(shared.file("typed.bin.part")) == nil)
        // A link of our own in the same directory is followed, as -o promises.
        let ours = safe.file("ours.bin")
        #expect(symlink(ours, shared.file("mine.bin")) == 0)
        let followed = try runCLI([server.dataURL(size: Self.size), "-o", shared.file("mine.bin")])
        #expect(followed.status == 0, "\(followed.stderr)")
        try server.expectFile(ours, size: Self.size, sourceLocation: #_sourceLocation)
        #expect(SharedDirectory.entry(shared.file("mine.bin")).map { $0.st_mode & S_IFMT } == S_IFLNK)
    }

    /// Requests for the file so far (`/_stats` itself not counted).
    private func fileRequests() throws -> Int {
        try server.stats().log.filter { $0.path.hasPrefix("/data/") }.count
    }

    /// Another user's FIFO at the typed -o path, with that user reading it, gets nothing (curl
    /// and wget refuse it with fs.protected_fifos=1, which is 0 here): refused before a request,
    /// with or without a link of ours on the way to it. A FIFO of our own there is written.
    @Test func anotherUsersFIFOAtTheTypedOutputPathReceivesNothingButOursDoes() throws {
        try shared.asNobody("mkfifo -m 666 planted.fifo")
        let fifo = shared.file("planted.fifo")
        // Nobody reads it, holding it open read-write (never blocks, never sees an end of file).
        let stolen = safe.file("stolen")
        #expect(FileManager.default.createFile(atPath: stolen, contents: nil))
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        reader.arguments = ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "/bin/sh", "-c", "exec cat 0<>'\(fifo)'"]
        reader.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stolen))
        reader.standardError = FileHandle.nullDevice
        try reader.run()
        defer {
            // SIGKILL: a process started from a test's thread inherits its blocked SIGTERM.
            kill(reader.processIdentifier, SIGKILL)
            reader.waitUntilExit()
        }
        let url = server.dataURL(size: Self.size, "auth=alice:s3cret").replacingOccurrences(of: "http://", with: "http://alice:s3cret@")
        let refused = try runCLI([url, "-o", fifo], timeoutSeconds: 30)
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("\(fifo) is a FIFO owned by uid 65534 in \(shared.path), which anyone can write to; another user may be reading it, so nothing was written to it; remove it"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        // Through a link of ours (followed, as -o promises) to the same FIFO: refused the same.
        let link = safe.file("to-the-fifo")
        #expect(symlink(fifo, link) == 0)
        let throughLink = try runCLI([url, "-o", link], timeoutSeconds: 30)
        #expect(throughLink.status == 4, "\(throughLink.stderr)")
        #expect(throughLink.stderr.contains("\(fifo) is a FIFO owned by uid 65534"), "\(throughLink.stderr)")
        #expect(try fileRequests() == 0)
        #expect(reader.isRunning)
        #expect(SharedDirectory.entry(stolen)?.st_size == 0)
        #expect(SharedDirectory.entry(fifo).map { $0.st_mode & S_IFMT } == S_IFIFO)

        // Our own FIFO in the same directory is a stream the user chose.
        let ours = shared.file("ours.fifo")
        #expect(mkfifo(ours, 0o600) == 0)
        let count = safe.file("count"), plain = server.dataURL(size: Self.size)
        let written = try TestProcess.run("/bin/bash", ["-c", "(wc -c < '\(ours)' > '\(count)' &) && \"$RF\" '\(plain)' -o '\(ours)' && sleep 0.3 && cat '\(count)'"],
                                          environment: ["RF": try TestProcess.rangefetchBinary], timeoutSeconds: 60)
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(Self.size), "\(written.stdout)")
    }

    /// A device another user owns in the shared directory (made by root and given away: only
    /// root can make one) is not written either; root's own /dev/null still is.
    @Test func anotherUsersDeviceAtTheTypedOutputPathIsRefusedButDevNullIsWritten() throws {
        let device = shared.file("null-of-nobody")
        #expect(try TestProcess.run("/bin/sh", ["-c", "mknod -m 666 '\(device)' c 1 3 && chown nobody:nogroup '\(device)'"]).status == 0)
        let refused = try runCLI([server.dataURL(size: Self.size), "-o", device], timeoutSeconds: 30)
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("\(device) is a character device owned by uid 65534 in \(shared.path)"), "\(refused.stderr)")
        #expect(try fileRequests() == 0)
        let null = try runCLI([server.dataURL(size: Self.size), "-o", "/dev/null"], timeoutSeconds: 60)
        #expect(null.status == 0, "\(null.stderr)")
    }

    /// `verify --metalink --repair` on a name that is another user's link in the shared
    /// directory: the link is not followed (-o's rule), so root's 0600 file of the same size it
    /// points to is untouched and nothing is fetched; named itself, that file is repaired.
    @Test func aRepairIsNotWrittenThroughAnotherUsersLink() throws {
        let size: Int64 = 4 << 20
        let bytes = try server.expectedBytes(size: size)
        let (whole, pieces) = MetalinkDownloadTests.digests(of: bytes)
        let meta = safe.file("f.meta4")
        try MetalinkDownloadTests.metalink(name: "f.bin", size: size, sha256: whole, pieces: pieces,
                                           urls: [server.dataURL(size: size, name: "f.bin")])
            .write(toFile: meta, atomically: true, encoding: .utf8)
        var corrupted = bytes
        corrupted.replaceSubrange((1 << 20)..<(2 << 20), with: Data(repeating: 7, count: 1 << 20))
        let victim = safe.file("root-only.bin")
        try corrupted.write(to: URL(fileURLWithPath: victim))
        chmod(victim, 0o600)
        try shared.asNobody("ln -s '\(victim)' f.bin")
        let before = try fileRequests()
        let refused = try runCLI(["verify", shared.file("f.bin"), "--metalink", meta, "--repair"])
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("\(shared.file("f.bin")) is a symbolic link owned by uid 65534 in \(shared.path), which anyone can write to; it is not followed, nothing was repaired; name the file it points to"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        let untouched = try Data(contentsOf: URL(fileURLWithPath: victim)) == corrupted
        #expect(untouched)
        #expect(SharedDirectory.entry(victim).map { $0.st_mode & 0o7777 } == 0o600)
        #expect(try fileRequests() == before)
        let direct = try runCLI(["verify", victim, "--metalink", meta, "--repair"])
        #expect(direct.status == 0, "\(direct.stderr)")
        let repaired = try Data(contentsOf: URL(fileURLWithPath: victim)) == bytes
        #expect(repaired)
    }

    /// Another user's link under the name of a directory on the way (`-d`, a new directory
    /// under it, the parents of `-o`, a list's `dir=`) is not followed: nothing is created where
    /// it points. A link of our own there is followed.
    @Test func anotherUsersLinkAsADirectoryOnTheWayIsNotFollowedButOursIs() throws {
        let pointed = try TemporaryDirectory("rf-pointed")
        try shared.asNobody("ln -s '\(pointed.path)' out")
        let link = shared.file("out")
        let refusal = "\(link) is a symbolic link owned by uid 65534 in \(shared.path), which anyone can write to; it is not followed, so nothing was written; remove it"
        let list = safe.file("list.txt")
        try "\(server.dataURL(size: Self.size))\n  dir=out/listed\n".write(toFile: list, atomically: true, encoding: .utf8)
        for arguments in [["-d", link], ["-d", link + "/new/sub"], ["-o", link + "/typed.bin"], ["-o", link + "/new/typed.bin"],
                          ["-i", list, "-d", shared.path]] {
            let result = try runCLI((arguments.first == "-i" ? [] : [server.dataURL(size: Self.size)]) + arguments)
            #expect(result.status == 4, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(refusal), "\(arguments): \(result.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: pointed.path).isEmpty, "\(arguments)")
        }
        #expect(try fileRequests() == 0)
        // Our own link to a directory, in the same shared directory, is followed.
        let mine = try TemporaryDirectory("rf-mine")
        #expect(symlink(mine.path, shared.file("mine")) == 0)
        let followed = try runCLI([server.dataURL(size: Self.size), "-d", shared.file("mine") + "/sub"])
        #expect(followed.status == 0, "\(followed.stderr)")
        try server.expectFile(mine.file("sub/data.bin"), size: Self.size, sourceLocation: #_sourceLocation)
    }

    @Test func anEmptyPartialFileOfAnotherUserIsNotAdopted() throws {
        try shared.asNobody(": > data.bin.part")
        let result = try runCLI([server.dataURL(size: Self.size), "-o", shared.file("data.bin"), "--checksum",
                                 "sha256=" + String(repeating: "0", count: 64)])
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("data.bin.part is owned by uid 65534, not by this user (uid 0)"), "\(result.stderr)")
        let planted = SharedDirectory.entry(shared.file("data.bin.part"))
        #expect(planted?.st_uid == 65534 && planted?.st_size == 0)
        #expect(SharedDirectory.entry(shared.file("data.bin")) == nil)
        #expect((try server.stats()).requests <= 1, "a refused partial file should stop the download before any range")
    }

    @Test func aPartialFileWithASecondNameIsNotAdopted() throws {
        // Planted by root: fs.protected_hardlinks stops nobody from linking to root's file, but
        // our check must not depend on it (and a user's own file linked elsewhere is the same case).
        let victim = try victim()
        #expect(link(victim, shared.file("data.bin.part")) == 0)
        let result = try runCLI([server.dataURL(size: Self.size), "-o", shared.file("data.bin")])
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("data.bin.part has 2 links"), "\(result.stderr)")
        try expectUntouched(victim)
    }

    @Test func continuingFromAnotherUsersFileIsRefused() throws {
        try shared.asNobody("printf abc > data.bin")
        let result = try runCLI([server.dataURL(size: Self.size), "-o", shared.file("data.bin"), "--continue"])
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("data.bin is owned by uid 65534"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: shared.file("data.bin"))) == Data("abc".utf8))
        #expect(SharedDirectory.entry(shared.file("data.bin.part")) == nil)
    }

    @Test func theBenchsDiskFileHasNoNameInTheDirectory() throws {
        let process = Process()
        let (out, err) = try TestProcess.launch(process, try TestProcess.rangefetchBinary,
                                                ["bench", "--sink", "disk", "-d", shared.path, "--runs", "1", "-n", "1,2",
                                                 "--duration", "1", server.dataURL(size: 64 << 20)], environment: [:])
        let stdout = AsyncData(out.fileHandleForReading), stderr = AsyncData(err.fileHandleForReading)
        var seen = Set<String>()
        var looks = 0
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline {
            seen.formUnion(try FileManager.default.contentsOfDirectory(atPath: shared.path))
            looks += 1
            usleep(5_000)
        }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(stderr.text())")
        #expect(stdout.text().contains("null"), "the null-sink comparison row is missing")
        #expect(looks > 20)
        #expect(seen.isEmpty, "the bench's file showed up by name: \(seen)")
    }
}
