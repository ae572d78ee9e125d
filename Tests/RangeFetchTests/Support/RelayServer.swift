import Foundation

/// `Benchmarks/relay/rf-relay.c`, compiled with `cc` for the test and started on a free loopback
/// port in front of `upstreamPort`, capping every TCP connection at `bytesPerSecond`. Stopped by pid.
final class RelayServer {
    let port: Int
    private let process: Process
    private let build: TemporaryDirectory

    init(upstreamPort: Int, bytesPerSecond: Int) throws {
        let source = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Benchmarks/relay/rf-relay.c").path
        build = try TemporaryDirectory("rf-relay")
        let binary = build.file("rf-relay")
        let compiled = try TestProcess.run("/usr/bin/cc", ["-O2", "-pthread", "-o", binary, source])
        guard compiled.status == 0 else { throw TestFailure("cannot compile rf-relay: \(compiled.stderr)") }
        port = try freeLoopbackPort()
        process = try TestProcess.startServer(binary, [String(port), String(upstreamPort), String(bytesPerSecond)], port: port)
    }

    deinit { stop() }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    func stop() {
        stopProcess(process, signal: SIGTERM, graceSeconds: 2)
    }
}
