import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A server that trickles is given up (after retries) within bounded time; a download the user
/// slows down is not.
@Suite(.serialized)
final class LowSpeedTests {
    @Test(arguments: [
        (Int64(1024), Int64?.none, 1, 1024.0),
        (1024, nil, 16, 64),
        (1024, 2048, 1, 512),
        (1024, 2048, 4, 128),
        (0, nil, 1, 0),
        (1024, nil, 0, 1024),
    ])
    func floorIsSharedByTheRequestsAndCappedByMaxSpeed(limit: Int64, cap: Int64?, requests: Int, floor: Double) {
        let rule = LowSpeedRule(bytesPerSecond: limit, windowSeconds: 30)
        #expect(rule.floorPerRequest(requests: requests, maximumBytesPerSecond: cap) == floor)
    }

    struct Step: Sendable {
        var now: Double
        var bytes: Int64
        var verdict: Double?
    }

    /// Floor 100 B/s over 10 s windows from a start at t = 0.
    @Test(arguments: [
        // Not judged before a whole window has passed, even with nothing received.
        [Step(now: 5, bytes: 0, verdict: nil), Step(now: 9.9, bytes: 0, verdict: nil), Step(now: 10, bytes: 0, verdict: 0)],
        // A fast first window starts the next; a slow second one is caught on its own.
        [Step(now: 10, bytes: 5000, verdict: nil), Step(now: 20, bytes: 5500, verdict: 50)],
        // Exactly the floor passes.
        [Step(now: 10, bytes: 1000, verdict: nil), Step(now: 20, bytes: 2000, verdict: nil)],
        // A trickle of 2 B/s.
        [Step(now: 10, bytes: 20, verdict: 2)],
    ])
    func windowJudgesEachWholeWindow(steps: [Step]) {
        var window = LowSpeedWindow(now: 0)
        for step in steps {
            #expect(window.check(now: step.now, bytes: step.bytes, floor: 100, windowSeconds: 10) == step.verdict, "at \(step.now)")
        }
    }

    @Test func slowMessageNamesTheURLAndTheSpeeds() {
        let message = LowSpeedRule.slowMessage(url: "http://127.0.0.1:1/f?X-Amz-Signature=abc", speed: 2.4, floor: 1024, seconds: 30)
        #expect(message.contains("http://127.0.0.1:1/f"), "\(message)")
        #expect(!message.contains("abc"), "\(message)")
        #expect(message.contains("2 B/s over 30 s") && message.contains("1.0 KiB/s"), "\(message)")
    }

    /// 2 B/s: each try is given up after one --speed-time window, and once the tries are spent
    /// the download fails naming the URL and the speed, long before the trickle would finish.
    @Test func aTricklingServerIsGivenUpAfterItsTries() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let out = try TemporaryDirectory()
        let url = server.dataURL(size: 100_000, "trickle=2")
        let started = Date()
        let result = try runCLI([url, "-o", out.file("t.bin"), "-n", "1", "--speed-time", "1", "--max-tries", "3",
                                 "--retry-wait", "0.1"], timeoutSeconds: 60)
        let seconds = Date().timeIntervalSince(started)
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("below the lowest speed accepted"), "\(result.stderr)")
        #expect(result.stderr.contains("/data/100000/data.bin") && result.stderr.contains("B/s over 1 s"), "\(result.stderr)")
        #expect(result.stderr.contains("gave up after 3 tries"), "\(result.stderr)")
        #expect(seconds < 20, "took \(seconds) s")
        // A request is logged once the server notices it broken off (its next trickled write).
        var gets = try server.stats().log.filter { $0.method == "GET" }
        for _ in 0..<40 where gets.count < 3 {
            usleep(100_000)
            gets = try server.stats().log.filter { $0.method == "GET" }
        }
        #expect(gets.count == 3, "\(gets.map { "\($0.method) \($0.range ?? "-") \($0.status) \($0.bytes)" })")
    }

    /// --max-speed holds four connections to about 16 KiB/s each, far under the --speed-limit
    /// asked for: the floor follows the cap, and the download completes untouched.
    @Test func aRateLimitedDownloadIsNotCut() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let out = try TemporaryDirectory()
        let started = Date()
        let result = try runCLI([server.dataURL(size: 256 << 10), "-o", out.file("r.bin"), "-n", "4", "--max-speed", "64K",
                                 "--speed-limit", "1M", "--speed-time", "1"], timeoutSeconds: 60)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("lowest speed"), "\(result.stderr)")
        // The cap really held the download back for more than a --speed-time window.
        #expect(Date().timeIntervalSince(started) > 2)
        #expect(FileSystem.size(of: out.file("r.bin")) == 256 << 10)
    }
}
