import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A stream's first pieces are small and its output stays exact and in order when a range is
/// slow: the first one (the reader waits on it) or the last one, with many connections.
@Suite(.serialized)
final class StreamHeadTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-stream-head")
    }

    /// Runs rangefetch with `-o -` into a pipe whose reader writes `out.bin`; stderr holds the
    /// CLI's own output (with `--json`, its events).
    private func stream(_ url: String, _ arguments: String) throws -> TestProcess.Result {
        try TestProcess.run("/bin/bash", ["-c", "cd '\(out.path)' && set -o pipefail && \"$RF\" '\(url)' -o - \(arguments) | cat > out.bin"],
                            environment: ["RF": try TestProcess.rangefetchBinary])
    }

    /// The ranges the server answered for `name`, as (lower, upper) from their Range headers,
    /// by offset.
    private func ranges(_ name: String) throws -> [(Int64, Int64)] {
        try server.stats().log.filter { $0.method == "GET" && $0.path.hasSuffix(name) }.compactMap { entry in
            guard let spec = entry.range?.split(separator: "=").last else { return nil }
            let ends = spec.split(separator: "-", omittingEmptySubsequences: false).map { Int64($0) }
            guard ends.count == 2, let lower = ends[0], let last = ends[1] else { return nil }
            return (lower, last + 1)
        }.sorted { $0.0 < $1.0 }
    }

    /// The first range trickles: the bytes still arrive exact and in order, the first request is
    /// one small head piece, later ones grow, and `-v` says when the first byte went out.
    @Test func aTricklingFirstRangeStillStreamsInOrderFromSmallHeadPieces() throws {
        let size: Int64 = 24 << 20
        let url = server.dataURL(size: size, name: "head.bin", "trickle=1000000&trickleoffset=0&tricklecount=1")
        let result = try stream(url, "-n 4 -v")
        #expect(result.status == 0, "\(result.stderr.suffix(600))")
        try server.expectFile(out.file("out.bin"), size: size, sourceLocation: #_sourceLocation)
        let ranges = try ranges("head.bin")
        let first = try #require(ranges.first)
        #expect(first.0 == 0 && first.1 - first.0 == StreamDownload.streamHeadBytes, "first request: \(first)")
        #expect(first.1 - first.0 <= 1 << 20)
        // 4 x 256 KiB, 4 x 512 KiB, then 1, 2 and 4 MiB pieces.
        #expect(ranges.contains { $0.0 == 1 << 20 && $0.1 - $0.0 == 512 << 10 }, "\(ranges)")
        #expect((ranges.map { $0.1 - $0.0 }.max() ?? 0) >= 4 << 20, "\(ranges)")
        #expect(result.stderr.contains("first byte to standard output after "), "\(result.stderr.suffix(600))")
    }

    /// Sixteen connections, the last piece trickles: the output is exact, in order, and the
    /// finish event gives the time to the first byte (and matches the schema).
    @Test func manyConnectionsAndASlowLastPieceStillStreamInOrder() throws {
        let size: Int64 = 24 << 20
        let connections = 16
        var plan = StreamPlan(size: size, pieceBytes: StreamDownload.streamPieceBytes(window: 64 << 20, connections: connections),
                              headBytes: StreamDownload.streamHeadBytes, round: connections)
        let last = try #require(plan.pieces(below: .max, atMost: 1000).last)
        let url = server.dataURL(size: size, name: "tail.bin", "trickle=2000000&trickleoffset=\(last.lower)&tricklecount=1")
        let result = try stream(url, "-n \(connections) --json")
        #expect(result.status == 0, "\(result.stderr.suffix(600))")
        try server.expectFile(out.file("out.bin"), size: size, sourceLocation: #_sourceLocation)
        #expect(try ranges("tail.bin").contains { $0.0 == last.lower }, "the last piece was asked for as planned")
        let finish = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
        let seconds = finish.range(of: "\"first_byte_seconds\":").map { finish[$0.upperBound...].prefix { $0.isNumber || $0 == "." } }
        #expect(seconds.flatMap { Double($0) } != nil, "\(finish)")
        try SchemaValidation.expectValid(result.stderr)
    }
}
