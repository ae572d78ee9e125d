import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A server that accepts the connection and never answers: the user sees at once what is
/// being waited for, and `-v` says how long it may take, instead of a blank screen for 30 s.
@Suite(.serialized)
final class SilentServerTests {
    let out: TemporaryDirectory
    let listener: SilentListener

    init() throws {
        out = try TemporaryDirectory("rf-silent")
        listener = try SilentListener()
    }

    deinit { listener.close() }

    var url: String { "http://127.0.0.1:\(listener.port)/x.bin" }

    /// On a terminal (a pseudo-terminal from `script`), the line comes before any answer.
    @Test func aTerminalShowsWhatIsWaitedForAtOnce() throws {
        let binary = try TestProcess.rangefetchBinary
        let command = "timeout -s INT 3 '\(binary)' '\(url)' -o '\(out.file("x.bin"))'"
        let result = try TestProcess.run("/usr/bin/script", ["-qfec", command, "/dev/null"], timeoutSeconds: 30)
        #expect(result.stdout.contains("waiting for 127.0.0.1:\(listener.port)…"), "\(result.stdout)")
    }

    /// With `-v` (not on a terminal) a line names the place and the longest wait (5 tries of
    /// 30 s and the waits between them: 158 s), then the interrupt ends it.
    @Test func verboseSaysHowLongASilentServerMayTakeAndTheRetryPolicyAgrees() throws {
        #expect(RetryPolicy().longestSilentServerSeconds(stallSeconds: 30) == 157.5)
        #expect(RetryPolicy(maximumTries: 1).longestSilentServerSeconds(stallSeconds: 30) == 30)
        let command = "timeout -s INT 2 '\(try TestProcess.rangefetchBinary)' -v '\(url)' -o '\(out.file("x.bin"))'"
        let result = try TestProcess.run("/bin/sh", ["-c", command], timeoutSeconds: 30)
        #expect(result.stderr.contains("connecting to 127.0.0.1:\(listener.port); a server that never answers is given up after about 158 s"),
                "\(result.stderr)")
        #expect(!result.stderr.contains("waiting for"), "the terminal's line stays off a pipe")
    }
}
