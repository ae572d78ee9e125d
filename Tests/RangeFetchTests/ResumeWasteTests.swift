import Foundation
import Testing
@testable import RangeFetch

/// What a kill costs on a fast link: checkpoints follow the bytes as well as the clock, so two
/// SIGKILLs during a download served at 32 MiB/s lose little.
@Suite(.serialized)
final class ResumeWasteTests {
    static let size: Int64 = 128 << 20
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer
    let source: String

    init() throws {
        www = try TemporaryDirectory("rf-waste-www")
        out = try TemporaryDirectory("rf-waste-out")
        // 4 ranges of 32 MiB, each request limited to 8 MiB/s: 32 MiB/s in all.
        nginx = try NginxServer(docroot: www.path, slowRate: "8m")
        source = try www.randomFile("big.bin", size: Self.size)
    }

    deinit { nginx.stop() }

    var arguments: [String] {
        [nginx.baseURL + "/slow/big.bin", "-o", out.file("big.bin"), "-n", "4", "--min-segment", "32M"]
    }

    @Test func twoKillsAtAThirdAndTwoThirdsCostAtMostFivePercent() throws {
        for fraction in [0.33, 0.66] {
            let run = try RunningCLI(arguments)
            #expect(run.waitUntilReceived(Int64(Double(Self.size) * fraction)), "never reached \(fraction)")
            run.send(SIGKILL)
            _ = try run.wait()
            #expect(out.exists("big.bin.part.rfjournal"))
        }
        let result = try runCLI(["-q"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Checksums.sha256sum(out.file("big.bin")) == Checksums.sha256sum(source))
        usleep(200_000) // let nginx finish logging aborted requests
        let served = nginx.accessLog().filter { $0.path.hasSuffix("/big.bin") }.map(\.bytes).reduce(0, +)
        let ratio = Double(served) / Double(Self.size)
        print("resume waste: served \(served) bytes for \(Self.size) after 2 kills: \(String(format: "%.3f", ratio))x")
        #expect(ratio <= 1.05, "served \(ratio)x the file")
    }
}
