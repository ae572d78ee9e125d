import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `rangefetch bench` driven as a user would: against nginx, a per-connection-capped relay and
/// servers with bad input. Behaviour (growth, knee, labels, exit codes), not timing thresholds.
@Suite(.serialized)
final class BenchCLITests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    /// The JSON objects of a `--json` run, by event name.
    private func events(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw TestFailure("not a JSON object: \(line)")
            }
            return object
        }
    }

    private func steps(_ events: [[String: Any]]) -> [(connections: Int, rate: Double)] {
        events.filter { $0["event"] as? String == "bench_step" }.map {
            (($0["connections"] as? Int) ?? 0, ($0["bytes_per_second"] as? Double) ?? Double(($0["bytes_per_second"] as? Int) ?? 0))
        }
    }

    private func summary(_ events: [[String: Any]]) throws -> [String: Any] {
        guard let last = events.last, last["event"] as? String == "bench_summary" else { throw TestFailure("no bench_summary last") }
        return last
    }

    @Test func uncappedLoopbackHasALowKneeAndValidJSON() throws {
        try www.randomFile("big.bin", size: 64 << 20)
        let result = try runCLI(["bench", "--json", "--duration", "1", "--runs", "1", "-n", "1,2,4,8", nginx.baseURL + "/big.bin"])
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try events(result.stdout)
        let summary = try summary(parsed)
        // Where the knee lies depends on how busy the machine is (idle here: 1-4 connections;
        // beside two busy loops 8 was once best by more than 5%), so the recommendation is
        // checked against the steps measured: the smallest count within 5% of the best.
        let measured = steps(parsed)
        let best = measured.map(\.rate).max() ?? 0
        let knee = measured.first { $0.rate * 1.05 >= best }?.connections
        #expect(knee != nil && summary["recommended_connections"] as? Int == knee, "\(measured) \(summary)")
        #expect(summary["one_stream"] as? Bool == false)
        // The sweep may stop early once a step stops growing: a non-empty prefix of -n's counts.
        #expect(!measured.isEmpty && [1, 2, 4, 8].starts(with: measured.map(\.connections)), "\(measured)")
        try SchemaValidation.expectValid(result.stdout)
    }

    @Test func perConnectionCapShowsAsGrowthAndAHighKnee() throws {
        try www.randomFile("big.bin", size: 64 << 20)
        let relay = try RelayServer(upstreamPort: nginx.port, bytesPerSecond: 8 << 20)
        let result = try runCLI(["bench", "--json", "--duration", "1", "--runs", "1", "-n", "1,2,4,8", relay.baseURL + "/big.bin"])
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try events(result.stdout)
        let measured = steps(parsed)
        let one = measured.first { $0.connections == 1 }?.rate ?? 0
        let eight = measured.first { $0.connections == 8 }?.rate ?? 0
        #expect(one > 0)
        #expect(eight > one * 3, "1: \(one) B/s, 8: \(eight) B/s")
        let summary = try summary(parsed)
        #expect((summary["recommended_connections"] as? Int ?? 0) >= 8, "\(summary)")
        #expect(summary["limit"] as? String == "per-connection cap")
        try SchemaValidation.expectValid(result.stdout)
    }

    @Test func neverFetchesMoreThanTheFilePerRun() throws {
        let size: Int64 = 3 << 20
        try www.randomFile("small.bin", size: size)
        try nginx.clearAccessLog()
        let result = try runCLI(["bench", "--runs", "2", "-n", "1,2,4", "--full-sweep", nginx.baseURL + "/small.bin"])
        #expect(result.status == 0, "\(result.stderr)")
        let body = nginx.accessLog().filter { $0.method == "GET" }.reduce(Int64(0)) { $0 + $1.bytes }
        // 3 steps x 2 runs, each at most the file (the probe's HEAD sends no body).
        #expect(body <= 6 * size, "sent \(body) bytes")
        #expect(body > 0)
        #expect(nginx.accessLog().filter { $0.method == "GET" }.allSatisfy { $0.status == 206 })
        #expect(result.stdout.contains("recommended: -n"))
        #expect(result.stdout.contains("verdict:"))
    }

    @Test func diskSinkComparesWithNullAndLeavesNothingBehind() throws {
        try www.randomFile("big.bin", size: 16 << 20)
        let csv = out.file("bench.csv")
        let result = try runCLI(["bench", "--sink", "disk", "-d", out.path, "--runs", "1", "-n", "1,2", "--duration", "1",
                                 "--csv", csv, nginx.baseURL + "/big.bin"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("null"), "the null-sink comparison row is missing:\n\(result.stdout)")
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(left == ["bench.csv"], "\(left)")
        let rows = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n")
        #expect(rows.first?.hasPrefix("connections,sink,") == true)
        #expect(rows.count >= 3)
    }

    @Test func missingFileIsANetworkError() throws {
        let result = try runCLI(["bench", "--runs", "1", nginx.baseURL + "/missing.bin"])
        #expect(result.status == 3)
        #expect(result.stderr.contains("404"), "\(result.stderr)")
    }

    @Test func emptyFileIsAClearError() throws {
        try Data().write(to: URL(fileURLWithPath: www.file("empty.bin")))
        let result = try runCLI(["bench", "--json", "--runs", "1", nginx.baseURL + "/empty.bin"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("empty"), "\(result.stderr)")
        try SchemaValidation.expectValid(result.stdout)
    }

    @Test func serverWithoutRangesGetsALabelledOneStreamMeasurement() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let result = try runCLI(["bench", "--json", "--runs", "1", "--duration", "1", server.dataURL(size: 4 << 20, name: "n.bin", "norange=1")])
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try events(result.stdout)
        let summary = try summary(parsed)
        #expect(summary["one_stream"] as? Bool == true)
        #expect((summary["note"] as? String)?.contains("byte ranges") == true)
        #expect(steps(parsed).map(\.connections) == [1])
        try SchemaValidation.expectValid(result.stdout)
        let text = try runCLI(["bench", "--runs", "1", "--duration", "1", server.dataURL(size: 4 << 20, name: "n2.bin", "norange=1")])
        #expect(text.stdout.contains("one-stream measurement"), "\(text.stdout)")
    }

    /// A server that sheds load (503 to every 3rd request): every step is measured and the
    /// refusals are counted as pushback, not a failure (this once exited 3, no step printed).
    @Test func occasional503sArePushbackAndEveryStepIsKept() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let url = server.dataURL(size: 32 << 20, name: "p.bin", "status503every=3&retryafter=0")
        let result = try runCLI(["bench", "--json", "--runs", "3", "--duration", "1", "--full-sweep", "-n", "1,2,4", url])
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try events(result.stdout)
        #expect(steps(parsed).map(\.connections) == [1, 2, 4], "\(result.stdout)")
        let pushbacks = parsed.filter { $0["event"] as? String == "bench_step" }.map { ($0["pushbacks"] as? Int) ?? 0 }
        #expect(pushbacks.allSatisfy { $0 > 0 }, "\(pushbacks)")
        let summary = try summary(parsed)
        #expect(summary["limit"] as? String == "server pushback", "\(summary)")
        #expect((summary["verdict"] as? String)?.contains("HTTP 503") == true, "\(summary)")
        try SchemaValidation.expectValid(result.stdout)
    }

    /// A server that refuses more than 8 responses at once is named for it, with its status.
    @Test func aServerRefusingMoreThanEightConnectionsIsNamed() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let url = server.dataURL(size: 64 << 20, name: "c.bin", "maxconcurrent=8&retryafter=0.2&rate=4000000")
        let result = try runCLI(["bench", "--runs", "1", "--duration", "1", "--full-sweep", "-n", "2,8,16", url],
                                environment: ["COLUMNS": "200"])
        #expect(result.status == 0, "\(result.stderr)")
        let stats = try server.stats()
        #expect(result.stdout.contains("the server refuses more than 8 connections (HTTP 503)"),
                "\(url): \(stats.log.count) requests, \(stats.log.filter { $0.status == 503 }.count) refused, peak \(stats.peak_connections) connections: \(result.stdout)")
        #expect(!result.stdout.contains("per-connection cap"), "\(result.stdout)")
        #expect(result.stdout.contains("recommended: -n 8") || result.stdout.contains("recommended: -n 2"), "\(result.stdout)")
    }

    static let usageErrors: [([String], String)] = [
        (["-n", "4,2"], "ascending"),
        (["-n", "1,x"], "counts like"),
        (["-n", "0,1"], "between 1 and 64"),
        (["--sink", "tape"], "null or disk"),
        (["--runs", "0"], "runs"),
        (["--bytes", "0"], "--bytes"),
        (["--max-speed", "1M"], "--max-speed"),
    ]

    @Test(arguments: usageErrors)
    func badOptionsAreUsageErrors(arguments: [String], fragment: String) throws {
        let result = try runCLI(["bench"] + arguments + ["http://127.0.0.1:1/x"])
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains(fragment), "\(arguments): \(result.stderr)")
    }
}

/// Checks `--json` output against docs/events.schema.json with scripts/validate-events.py.
enum SchemaValidation {
    static var repository: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    static func expectValid(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let scratch = try TemporaryDirectory("rf-events")
        let file = scratch.file("events.jsonl")
        try output.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try TestProcess.run("/usr/bin/env", ["python3", repository + "/scripts/validate-events.py", file])
        #expect(result.status == 0, "events do not match the schema:\n\(result.stdout)\(result.stderr)", sourceLocation: sourceLocation)
    }
}
