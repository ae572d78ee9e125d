import Foundation
import Testing

/// The daemon's queue survives `kill -9`: every entry comes back with its status, place and
/// options, paused ones stay paused, the others resume from their journals, and every file
/// ends exact without fetching again more than what was in flight.
@Suite(.serialized)
final class DaemonRestartTests {
    let out: TemporaryDirectory
    let state: TemporaryDirectory
    let server: FaultServer
    static let size: Int64 = 4 << 20

    init() throws {
        out = try TemporaryDirectory()
        state = try TemporaryDirectory()
        server = try FaultServer()
    }

    deinit { server.stop() }

    @Test func twentyEntriesComeBackAfterKillNine() throws {
        var daemon = try RunningDaemon(dir: out.path, stateDir: state.path)
        #expect(try daemon.call("aria2.changeGlobalOption", ["{\"max-concurrent-downloads\":\"2\"}"]).result as? String == "OK")
        let names = (0..<20).map { "k\($0).bin" }
        let gids = try names.map { name in
            let answer = try daemon.call("aria2.addUri", ["[\"\(server.dataURL(size: Self.size, name: name, "rate=2000000"))\"]",
                                                          "{\"split\":\"1\",\"out\":\"\(name)\"}"])
            return try #require(answer.result as? String, "\(answer.body)")
        }
        let pausedOnes = [gids[3], gids[7], gids[11]]
        for gid in pausedOnes { #expect(try daemon.call("aria2.pause", ["\"\(gid)\""]).result as? String == gid) }
        #expect(try daemon.call("aria2.changePosition", ["\"\(gids[19])\"", "0", "\"POS_SET\""]).result as? Int == 0)
        // The first two run; kill once they are well under way.
        let deadline = Date().addingTimeInterval(30)
        while (Int64(try daemon.status(gids[1])["completedLength"] as? String ?? "0") ?? 0) < 1 << 20 {
            guard Date() < deadline else { throw TestFailure("no progress: \(try daemon.status(gids[1]))") }
            usleep(50_000)
        }
        let waitingBefore = try daemon.call("aria2.tellWaiting", ["0", "100", "[\"gid\"]"]).result as? [[String: Any]]
        daemon.kill9()

        daemon = try RunningDaemon(dir: out.path, stateDir: state.path)
        defer { daemon.stop() }
        // The waiting order first: the two that ran resume at once and finish in about 1.5 s,
        // and the next two then leave the waiting list (on a loaded machine, the status calls
        // below took that long).
        let waitingAfter = try daemon.call("aria2.tellWaiting", ["0", "100", "[\"gid\"]"]).result as? [[String: Any]]
        for gid in pausedOnes { #expect(try daemon.status(gid)["status"] as? String == "paused") }
        let statuses = try gids.map { try daemon.status($0)["status"] as? String ?? "missing" }
        #expect(!statuses.contains("missing") && !statuses.contains("error"), "\(statuses)")
        let options = try daemon.call("aria2.getOption", ["\"\(gids[5])\""]).result as? [String: Any]
        #expect(options?["out"] as? String == "k5.bin" && options?["split"] as? String == "1", "\(String(describing: options))")
        // The waiting order (19 first) came back; the ones that ran wait again, first in line.
        let before = waitingBefore?.compactMap { $0["gid"] as? String } ?? []
        let after = waitingAfter?.compactMap { $0["gid"] as? String }.filter(before.contains) ?? []
        #expect(after == before, "order before \(before), after \(after)")
        #expect(try daemon.call("aria2.getGlobalOption").result.flatMap { ($0 as? [String: Any])?["max-concurrent-downloads"] as? String } == "2")

        #expect(try daemon.call("aria2.changeGlobalOption", ["{\"max-concurrent-downloads\":\"8\"}"]).result as? String == "OK")
        #expect(try daemon.call("aria2.unpauseAll").result as? String == "OK")
        for gid in gids { try daemon.wait(gid, for: "complete", seconds: 60) }
        let served = try server.stats().body_bytes
        for name in names { try server.expectFile(out.file(name), size: Self.size, sourceLocation: #_sourceLocation) }
        // Two downloads were cut by the kill: at most what was in flight came twice.
        #expect(served <= 20 * Self.size + (4 << 20), "served \(served) for 20 files of \(Self.size)")
    }
}
