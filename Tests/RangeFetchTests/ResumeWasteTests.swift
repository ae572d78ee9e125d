import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// What a kill costs on a fast link: checkpoints follow the bytes as well as the clock, and
/// partly filled buffers are flushed for them, so two SIGKILLs during a download served at
/// 32 MiB/s lose little. (Our fault server paces every response evenly; nginx's `limit_rate`
/// would first burst a second's worth into the socket buffers, which any kill throws away.)
@Suite(.serialized)
final class ResumeWasteTests {
    static let size: Int64 = 128 << 20
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-waste-out")
    }

    deinit { server.stop() }

    /// 4 ranges of 32 MiB, each response paced at 8 MiB/s: 32 MiB/s in all.
    var arguments: [String] {
        [server.dataURL(size: Self.size, name: "big.bin", "rate=\(8 << 20)"), "-o", out.file("big.bin"),
         "-n", "4", "--min-segment", "32M"]
    }

    @Test func twoKillsAtAThirdAndTwoThirdsCostAtMostFivePercent() throws {
        let expected = try server.expectedBytes(size: Self.size)
        for fraction in [0.33, 0.66] {
            let run = try RunningCLI(arguments)
            #expect(run.waitUntilReceived(Int64(Double(Self.size) * fraction)), "never reached \(fraction)")
            run.send(SIGKILL)
            _ = try run.wait()
            #expect(out.exists("big.bin.part.rfjournal"))
        }
        let result = try runCLI(["-q"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out.file("big.bin"))) == expected)
        let served = try server.stats().log.filter { $0.path.hasSuffix("/big.bin") }.map(\.bytes).reduce(0, +)
        let ratio = Double(served) / Double(Self.size)
        print("resume waste: served \(served) bytes for \(Self.size) after 2 kills: \(String(format: "%.3f", ratio))x")
        #expect(ratio <= 1.05, "served \(ratio)x the file")
    }
}
