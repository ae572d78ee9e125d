import Foundation

/// `rangefetch daemon` started for one test on a free port, called with curl (a client we did
/// not write), and stopped by pid.
final class RunningDaemon {
    let process = Process()
    let port: Int
    let secret: String?
    private let stdoutPipe: Pipe

    var endpoint: String { "http://127.0.0.1:\(port)/jsonrpc" }

    convenience init(dir: String, stateDir: String, secret: String? = "s3cret", extra: [String] = []) throws {
        var arguments = ["daemon", "--rpc-listen-port", "0", "--dir", dir, "--state-dir", stateDir] + extra
        if let secret { arguments += ["--rpc-secret", secret] }
        try self.init(arguments: arguments, secret: secret)
    }

    /// `rangefetch ARGUMENTS` (`daemon …`, or `aria2c …` on a free port the caller chose).
    init(arguments: [String], secret: String?) throws {
        self.secret = secret
        let (out, _) = try TestProcess.launch(process, try TestProcess.rangefetchBinary, arguments, environment: [:])
        stdoutPipe = out
        var buffer = Data()
        let deadline = Date().addingTimeInterval(20)
        var found: Int?
        while found == nil, Date() < deadline, process.isRunning {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            let text = String(decoding: buffer, as: UTF8.self)
            if let range = text.range(of: "listening on http://127.0.0.1:") {
                found = Int(text[range.upperBound...].prefix { $0.isNumber })
            }
        }
        guard let found else {
            stopProcess(process, signal: SIGKILL, graceSeconds: 1)
            throw TestFailure("the daemon did not say where it listens: \(String(decoding: buffer, as: UTF8.self))")
        }
        port = found
    }

    deinit { stop() }

    func stop() {
        stopProcess(process, signal: SIGTERM, graceSeconds: 10)
    }

    /// `kill -9`: no chance to write anything more.
    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    struct Answer {
        var status: Int
        var body: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) }
        /// `result` of a single call's answer.
        var result: Any? { (json as? [String: Any])?["result"] }
        var error: [String: Any]? { (json as? [String: Any])?["error"] as? [String: Any] }
    }

    /// POSTs `body` to /jsonrpc with `headers`.
    func post(_ body: String, headers: [String] = [], method: String = "POST", path: String = "/jsonrpc") throws -> Answer {
        let scratch = try TemporaryDirectory("rf-rpc")
        let file = scratch.file("body")
        try body.write(toFile: file, atomically: true, encoding: .utf8)
        var arguments = ["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, "-H", "Content-Type: application/json"]
        for header in headers { arguments += ["-H", header] }
        if method == "POST" { arguments += ["--data-binary", "@" + file] }
        arguments.append("http://127.0.0.1:\(port)" + path)
        let result = try TestProcess.run("/usr/bin/curl", arguments)
        guard let newline = result.stdout.lastIndex(of: "\n") else { throw TestFailure("curl: \(result.stderr)") }
        return Answer(status: Int(result.stdout[result.stdout.index(after: newline)...]) ?? 0,
                      body: String(result.stdout[..<newline]))
    }

    /// Calls `method` with the token first, then `params` (JSON text of each).
    func call(_ method: String, _ params: [String] = [], id: String = "\"t\"") throws -> Answer {
        let token = secret.map { ["\"token:\($0)\""] } ?? []
        let list = (token + params).joined(separator: ",")
        return try post("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\",\"params\":[\(list)]}")
    }

    /// `tellStatus(gid)`'s fields.
    func status(_ gid: String) throws -> [String: Any] {
        try call("aria2.tellStatus", ["\"\(gid)\""]).result as? [String: Any] ?? [:]
    }

    /// Waits (up to `seconds`) until `gid`'s status is `wanted`; returns its fields.
    @discardableResult
    func wait(_ gid: String, for wanted: String, seconds: Double = 30) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let fields = try status(gid)
            if fields["status"] as? String == wanted { return fields }
            guard Date() < deadline else { throw TestFailure("\(gid) is not \(wanted) after \(seconds) s: \(fields)") }
            usleep(50_000)
        }
    }
}
