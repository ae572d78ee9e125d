import Foundation
import Testing

/// `rangefetch add`, `ls`, `pause`, `resume`, `rm` and `watch` against a running daemon, as a
/// user at a shell would: the secret read from the state directory, each verb's output and exit
/// status, and the failures a user meets (no daemon, a wrong secret, an unknown GID).
@Suite(.serialized)
final class DaemonVerbsTests {
    let out: TemporaryDirectory
    let state: TemporaryDirectory
    let server: FaultServer
    let daemon: RunningDaemon
    static let size: Int64 = 8 << 20

    init() throws {
        out = try TemporaryDirectory()
        state = try TemporaryDirectory()
        server = try FaultServer()
        // No --rpc-secret: the daemon makes one, and the verbs read it from --state-dir.
        daemon = try RunningDaemon(dir: out.path, stateDir: state.path, secret: nil)
    }

    deinit {
        daemon.stop()
        server.stop()
    }

    var address: [String] { ["--rpc-port", String(daemon.port), "--state-dir", state.path] }

    func verb(_ arguments: [String]) throws -> TestProcess.Result {
        try runCLI(arguments.prefix(1) + address + arguments.dropFirst())
    }

    /// The GID `add` printed (`added GID  URL`).
    func gid(_ result: TestProcess.Result) throws -> String {
        let words = result.stdout.split(separator: " ")
        try #require(result.status == 0 && words.first == "added", "\(result.stdout)\(result.stderr)")
        return String(words[1])
    }

    func waitFor(_ status: String, of gid: String) throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let line = try verb(["ls"]).stdout.split(separator: "\n").first { $0.hasPrefix(gid) }
            if line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first == Substring(status) { return }
            usleep(100_000)
        }
        throw TestFailure("\(gid) never became \(status): \(try verb(["ls"]).stdout)")
    }

    @Test func aDownloadIsAddedListedPausedResumedAndRemoved() throws {
        let fast = try gid(try verb(["add", "-o", "fast.bin", server.dataURL(size: Self.size, name: "f.bin")]))
        let slow = try gid(try verb(["add", "-n", "2", server.dataURL(size: Self.size, name: "s.bin", "rate=1000000")]))
        try waitFor("complete", of: fast)
        try server.expectFile(out.file("fast.bin"), size: Self.size, sourceLocation: #_sourceLocation)

        let paused = try verb(["pause", String(slow.prefix(6))])
        #expect(paused.status == 0 && paused.stdout == "paused \(slow)\n", "\(paused.stdout)\(paused.stderr)")
        let listing = try verb(["ls"]).stdout
        #expect(listing.hasPrefix("GID "), "\(listing)")
        #expect(listing.contains("\(slow) paused") && listing.contains("s.bin") && listing.contains("\(fast) complete  100%"), "\(listing)")
        let json = try verb(["ls", "--json"]).stdout.split(separator: "\n")
        #expect(json.count == 2 && json.allSatisfy { $0.hasPrefix("{") }, "\(json)")

        let resumed = try verb(["resume", slow])
        #expect(resumed.status == 0 && resumed.stdout == "resumed \(slow)\n")
        let removed = try verb(["rm", slow, fast])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(!out.exists("s.bin.part") && out.exists("fast.bin"), "a removed download's partial file goes; a finished file stays")
        #expect(try verb(["ls"]).stdout.split(separator: "\n").count == 1, "only the header is left")
    }

    @Test func allAndWatchPrintTheirLines() throws {
        _ = try gid(try verb(["add", "--pause", server.dataURL(size: 1 << 20, name: "w.bin")]))
        let all = try verb(["resume", "--all"])
        #expect(all.status == 0 && all.stdout == "resumed all\n", "\(all.stderr)")
        let none = try verb(["pause"])
        #expect(none.status == 2 && none.stderr.contains("give GIDs, or --all"), "\(none.stderr)")
        #expect(try verb(["pause", "--all"]).stdout == "paused all\n")
        let watched = try verb(["watch", "--count", "3", "--interval", "0.2"])
        #expect(watched.status == 0)
        #expect(watched.stdout.components(separatedBy: "GID ").count - 1 == 3, "\(watched.stdout)")
    }

    @Test func theFailuresAUserMeetsAreSaidInOneLine() throws {
        let unknown = try verb(["pause", "abcdef"])
        #expect(unknown.status == 1 && unknown.stderr == "rangefetch: error: abcdef: GID abcdef is not found\n", "\(unknown.stderr)")
        let wrongSecret = try runCLI(["ls", "--rpc-port", String(daemon.port), "--rpc-secret", "wrong"])
        #expect(wrongSecret.status == 1 && wrongSecret.stderr.contains("refused the secret"), "\(wrongSecret.stderr)")
        let nobody = try runCLI(["ls", "--rpc-port", "9", "--rpc-secret", "x"])
        #expect(nobody.status == 3 && nobody.stderr.contains("no daemon answers at http://127.0.0.1:9/jsonrpc"), "\(nobody.stderr)")
        let twoNames = try verb(["add", "-o", "x", "http://127.0.0.1:9/a", "http://127.0.0.1:9/b"])
        #expect(twoNames.status == 2 && twoNames.stderr.contains("one URL"), "\(twoNames.stderr)")
        let outside = try verb(["add", "-d", "/etc", "http://127.0.0.1:9/a"])
        #expect(outside.status == 1 && outside.stderr.contains("outside the download root"), "\(outside.stderr)")
    }
}
