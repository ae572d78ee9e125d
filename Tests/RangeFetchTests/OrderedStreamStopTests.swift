import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A stream that ends (done, failed or interrupted) stops its copying before its output and
/// spool are closed: a late write could otherwise reach whatever file takes the descriptor number.
struct OrderedStreamStopTests {
    private func spool(bytes: Int) throws -> PartialFile {
        let spool = try PartialFile(anonymousIn: "/var/tmp")
        let data = [UInt8](repeating: 0x5A, count: bytes)
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in try spool.write(buffer, at: 0) }
        return spool
    }

    private func waitUntilStill(_ stream: OrderedStream) {
        var last: Int64 = -1
        while stream.sentBytes != last {
            last = stream.sentBytes
            usleep(100_000)
        }
    }

    @Test func aStreamWaitingForAFullOutputStopsAtOnceAndWritesNothingMore() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        let size = 4 << 20
        let spool = try spool(bytes: size)
        let stream = OrderedStream(spool: spool, output: ends[1], outputName: "a pipe", window: 1 << 30,
                                   algorithms: [.sha256]) { _ in }
        stream.advance(to: Int64(size))
        waitUntilStill(stream)
        let sent = stream.sentBytes
        #expect(sent > 0 && sent < Int64(size), "the pipe should be full: \(sent) bytes sent")
        let began = Date()
        #expect(stream.stop(waitingAtMost: 2))
        #expect(Date().timeIntervalSince(began) < 1, "stopping took \(Date().timeIntervalSince(began)) s")
        // Room in the pipe now: nothing more is written after the stop.
        var sink = [UInt8](repeating: 0, count: 1 << 20)
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        var drained = 0
        while true {
            let count = sink.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if count <= 0 { break }
            drained += count
        }
        usleep(300_000)
        let late = sink.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
        #expect(Int64(drained) == sent && late <= 0, "read \(drained) of \(sent), then \(late) more")
    }

    /// A blocking write to a reader that stopped reading cannot be interrupted: stop says so, and
    /// the caller keeps the descriptors open.
    @Test func aStreamStuckInABlockingWriteSaysItCouldNotStop() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let size = 1 << 20
        let spool = try spool(bytes: size)
        let stream = OrderedStream(spool: spool, output: ends[1], outputName: "a pipe", window: 1 << 30,
                                   algorithms: []) { _ in }
        stream.advance(to: Int64(size))
        waitUntilStill(stream)
        #expect(!stream.stop(waitingAtMost: 0.3))
        // Read until the stuck write is done: the drain then ends, before the pipe closes.
        var sink = [UInt8](repeating: 0, count: 1 << 20)
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        var stopped = false
        let deadline = Date().addingTimeInterval(5)
        while !stopped && Date() < deadline {
            _ = sink.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            stopped = stream.stop(waitingAtMost: 0.05)
        }
        #expect(stopped, "the drain never ended once the reader read again")
    }
}
