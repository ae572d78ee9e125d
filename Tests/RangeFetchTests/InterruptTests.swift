import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Ctrl-C (SIGINT) stops every phase of a download promptly: exit 130 within a couple of
/// seconds (generous for a loaded 2-core machine), whatever the server claims or withholds.
@Suite(.serialized)
final class InterruptTests {
    let out: TemporaryDirectory

    init() throws {
        out = try TemporaryDirectory()
    }

    /// Sends SIGINT once `ready` holds (or after `readyTimeoutSeconds`), then expects exit 130
    /// within `withinSeconds`; returns stderr.
    private func interrupt(_ run: RunningCLI, when ready: () -> Bool, readyTimeoutSeconds: Double = 10,
                           withinSeconds: Double = 2, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let deadline = Date().addingTimeInterval(readyTimeoutSeconds)
        while !ready() && Date() < deadline { usleep(10_000) }
        #expect(ready(), "the phase to interrupt was not reached", sourceLocation: sourceLocation)
        let sent = Date()
        run.send(SIGINT)
        let (status, stderr) = try run.wait(timeoutSeconds: 30)
        let seconds = Date().timeIntervalSince(sent)
        #expect(status == 130, "\(stderr)", sourceLocation: sourceLocation)
        #expect(seconds < withinSeconds, "exit took \(seconds) s", sourceLocation: sourceLocation)
        return stderr
    }

    /// A server that takes the connection and never answers (the kernel completes the handshake;
    /// nobody accepts): the probe waits for headers that never come.
    @Test func interruptDuringAProbeWhoseHeadersNeverCome() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let run = try RunningCLI(["http://127.0.0.1:\(listener.port)/x.bin", "-o", out.file("x.bin")])
        let started = Date()
        let stderr = try interrupt(run, when: { Date().timeIntervalSince(started) > 1 })
        #expect(stderr.contains("interrupted"), "\(stderr)")
    }

    /// 2^62 bytes claimed, with ranges, into a stream: the plan must not count its 2^38 pieces
    /// before the first byte (that loop ignored every signal but SIGKILL).
    @Test func interruptRightAfterTheStartOfAStreamClaimingTwoToThe62Bytes() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let run = try RunningCLI([server.dataURL(size: 1 << 62), "-o", "/dev/null", "-n", "4"])
        let stderr = try interrupt(run, when: { run.outputLines.contains { $0.contains("\"event\":\"start\"") } })
        #expect(stderr.contains("went to /dev/null"), "\(stderr)")
    }

    @Test func interruptDuringAStreamClaimingTwoToThe62BytesOnceBytesFlow() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let run = try RunningCLI([server.dataURL(size: 1 << 62), "-o", "/dev/null", "-n", "4"])
        _ = try interrupt(run, when: { run.receivedBytes >= 32 << 20 }, readyTimeoutSeconds: 30)
    }

    /// What is saved is said in the bar's units (MiB, GiB), not as a count of bytes.
    @Test func theInterruptedMessageGivesSizesInMebibytes() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let run = try RunningCLI([server.dataURL(size: 64 << 20, name: "m.bin", "rate=8000000"), "-o", out.file("m.bin"), "-n", "4"])
        let stderr = try interrupt(run, when: { run.receivedBytes >= 4 << 20 }, readyTimeoutSeconds: 30)
        #expect(stderr.contains(" MiB of 64.0 MiB are saved in "), "\(stderr)")
        #expect(stderr.range(of: "[0-9]{7,} of", options: .regularExpression) == nil, "\(stderr)")
    }

    @Test func interruptDuringATransferThatTrickles() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let run = try RunningCLI([server.dataURL(size: 4 << 20, "trickle=20000"), "-o", out.file("t.bin"), "-n", "2"])
        _ = try interrupt(run, when: { run.receivedBytes > 0 })
    }

    /// The file is already there, complete by size, and a checksum is given: it is hashed
    /// before anything else. A 64 GiB sparse file takes far longer than the test.
    @Test func interruptWhileHashingAnExistingLargeFile() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let size: Int64 = 64 << 30
        let path = out.file("big.bin")
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        #expect(truncate(path, off_t(size)) == 0)
        let run = try RunningCLI([server.dataURL(size: size), "-o", path, "--checksum", "sha256=" + String(repeating: "0", count: 64)])
        let started = Date()
        let stderr = try interrupt(run, when: { Date().timeIntervalSince(started) > 1.5 })
        #expect(!stderr.contains("checksum mismatch"), "\(stderr)")
        #expect(FileSystem.size(of: path) == size)
    }
}

/// A listening TCP socket on 127.0.0.1 that never accepts: connections complete (backlog) and
/// then hear nothing.
final class SilentListener {
    let port: Int
    private var descriptor: Int32

    init() throws {
        (descriptor, port) = try loopbackSocket(listening: 16)
    }

    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}
