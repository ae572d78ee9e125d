import Foundation
import Testing

/// Our fault-injecting HTTP server (`Tests/Support/fault_server.py`), started for one test and
/// stopped by pid. Faults are chosen per request by query parameters (see the script's docstring).
final class FaultServer {
    let port: Int
    private let process: Process

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// - Parameter root: served under `/file/NAME`.
    init(root: String? = nil) throws {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/fault_server.py").path
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--port", "0"] + (root.map { ["--root", $0] } ?? [])
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let found = announcedPort(out.fileHandleForReading, of: process, within: 10) else {
            process.terminate()
            throw TestFailure("fault server did not start (is python3 installed?)")
        }
        port = found
    }

    deinit { stop() }

    func stop() {
        stopProcess(process, signal: SIGTERM, graceSeconds: 2)
    }

    /// `/data/SIZE/NAME?QUERY`: SIZE bytes of deterministic content.
    func dataURL(size: Int64, name: String = "data.bin", _ query: String = "") -> String {
        "\(baseURL)/data/\(size)/\(name)" + (query.isEmpty ? "" : "?" + query)
    }

    struct Stats: Decodable {
        /// TCP connections open at most at once since the last reset (a stats request's own included).
        var peak_connections: Int
        struct Entry: Decodable {
            var method: String
            var path: String
            var query: String
            /// The server's number of the TCP connection.
            var connection: Int
            var range: String?
            var if_range: String?
            var status: Int
            var bytes: Int64
            /// The request's `Accept-Encoding`, `nil` when it sent none.
            var accept_encoding: String?
            /// How many `Accept-Encoding` lines the request carried.
            var accept_encoding_lines: Int
            /// Whether the request carried an `Authorization` header.
            var auth: Bool?
            /// Whether it carried a `Cookie` header.
            var cookie: Bool?
            /// The request's `Host` header.
            var host: String?
            /// Every header field of the request: lower-cased name -> value.
            var headers: [String: String]?
        }
        var requests: Int
        var body_bytes: Int64
        /// Body bytes as each write went out (``body_bytes`` counts a response at its end).
        var written_bytes: Int64
        var log: [Entry]
    }

    func stats() throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: fetch("/_stats"))
    }

    /// Moves the server's clock for `signed=` forward by `seconds`, as if that much time had
    /// passed (`/_clock?advance=`): a signature issued before is that much older. Real time
    /// (pacing, stalls) is untouched.
    func advanceClock(seconds: Double) throws {
        _ = try fetch("/_clock?advance=\(seconds)")
    }

    /// The exact bytes the server serves for `/data/SIZE/…` at `version`, fetched in one plain
    /// GET by curl (an independent client).
    func expectedBytes(size: Int64, version: Int = 0) throws -> Data {
        try fetch("/data/\(size)/reference.bin" + (version == 0 ? "" : "?version=\(version)"))
    }

    /// Checks that the file at `path` holds exactly what `/data/SIZE/…` serves at `version`.
    func expectFile(_ path: String, size: Int64, version: Int = 0, sourceLocation: SourceLocation) throws {
        let actual = try Data(contentsOf: URL(fileURLWithPath: path))
        let expected = try expectedBytes(size: size, version: version)
        #expect(actual.count == expected.count, sourceLocation: sourceLocation)
        // Compared first: a failed #expect on two large Data values spends minutes describing them.
        let same = actual == expected
        #expect(same, "bytes differ from the server's (version \(version))", sourceLocation: sourceLocation)
    }

    private func fetch(_ path: String) throws -> Data {
        let scratch = try TemporaryDirectory("rf-curl")
        let file = scratch.file("body")
        let result = try TestProcess.run("/usr/bin/curl", ["-sSf", "-o", file, baseURL + path])
        guard result.status == 0 else { throw TestFailure("curl \(path) failed: \(result.stderr)") }
        return try Data(contentsOf: URL(fileURLWithPath: file))
    }
}

/// The port a test server prints as a `PORT N` line on its standard output once it listens;
/// `nil` when it exits, closes its output or takes longer than `seconds`.
func announcedPort(_ handle: FileHandle, of process: Process, within seconds: Double) -> Int? {
    var buffer = Data()
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline && process.isRunning {
        let chunk = handle.availableData
        if chunk.isEmpty { return nil }
        buffer.append(chunk)
        let text = String(decoding: buffer, as: UTF8.self)
        if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) {
            return Int(line.dropFirst(5).trimmingCharacters(in: .whitespaces))
        }
    }
    return nil
}
