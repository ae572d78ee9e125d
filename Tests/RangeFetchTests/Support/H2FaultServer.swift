import Foundation
import Testing

/// Our fault-injecting HTTP/2 server (`Tests/Support/h2_fault_server.py`, on Debian's
/// python3-h2): TLS with ALPN h2, a certificate made for the test, one thread for every stream
/// (a CPU-bound server). Faults are chosen per request by query parameters (see the script's
/// docstring); stopped by pid.
final class H2FaultServer {
    let port: Int
    let certificate: (cert: String, key: String)
    private let keys: TemporaryDirectory
    private let process: Process

    var baseURL: String { "https://127.0.0.1:\(port)" }

    init() throws {
        keys = try TemporaryDirectory("rf-h2keys")
        certificate = try selfSignedCertificate(in: keys)
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/h2_fault_server.py").path
        process = Process()
        // Debian's interpreter, where python3-h2 is installed (a python3 earlier on PATH may lack it).
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, "--port", "0", "--cert", certificate.cert, "--key", certificate.key]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        guard let found = announcedPort(out.fileHandleForReading, of: process, within: 30) else {
            stopProcess(process, signal: SIGTERM, graceSeconds: 2)
            let why = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw TestFailure("h2 fault server did not start (is python3-h2 installed? scripts/lib/packages.sh rf_test_server_packages): \(why)")
        }
        port = found
        // Its error output is not read again: drained to nowhere, so it never blocks the server.
        err.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
    }

    deinit { stop() }

    func stop() {
        stopProcess(process, signal: SIGTERM, graceSeconds: 2)
    }

    /// `/data/SIZE/data.bin?QUERY`: SIZE bytes of deterministic content.
    func dataURL(size: Int64, _ query: String = "") -> String {
        "\(baseURL)/data/\(size)/data.bin" + (query.isEmpty ? "" : "?" + query)
    }

    struct Stats: Decodable {
        var requests: Int
        /// DATA payload bytes sent since the last reset.
        var body_bytes: Int64
        /// Faults fired since the last reset.
        var faults: Int
    }

    func stats() throws -> Stats { try JSONDecoder().decode(Stats.self, from: fetch("/_stats")) }

    /// Zeroes the counters and the faults fired: a new run.
    func reset() throws { _ = try fetch("/_reset") }

    /// The content's SHA-256 (hex), as the server computes it.
    func sha256(size: Int64) throws -> String {
        String(decoding: try fetch("/_sha256/\(size)"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// curl's `--http2` download of `url` into `path` (one stream), seconds.
    func curlSeconds(_ url: String, to path: String) throws -> Double {
        let start = Date()
        let result = try TestProcess.run("/usr/bin/curl", ["-sSf", "--http2", "--cacert", certificate.cert, "-o", path, url],
                                         timeoutSeconds: 120)
        guard result.status == 0 else { throw TestFailure("curl \(url) failed: \(result.stderr)") }
        return Date().timeIntervalSince(start)
    }

    private func fetch(_ path: String) throws -> Data {
        let scratch = try TemporaryDirectory("rf-curl")
        let file = scratch.file("body")
        let result = try TestProcess.run("/usr/bin/curl", ["-sSf", "--http2", "--max-time", "20", "--cacert", certificate.cert,
                                                           "-o", file, baseURL + path])
        guard result.status == 0 else { throw TestFailure("curl \(path) failed: \(result.stderr)") }
        return try Data(contentsOf: URL(fileURLWithPath: file))
    }
}

/// The SHA-256 of the file at `path` (hex), by sha256sum: an independent check of the bytes.
func sha256OfFile(_ path: String) throws -> String {
    let result = try TestProcess.run("/usr/bin/sha256sum", [path])
    guard result.status == 0 else { throw TestFailure("sha256sum failed: \(result.stderr)") }
    return String(result.stdout.prefix(64))
}
