import Foundation

/// A `rangefetch --json` process watched while it runs, so a test can kill it mid-download.
final class RunningCLI: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var received: Int64 = 0
    private var lines: [String] = []
    private let stderrData: AsyncData
    private let readerDone = DispatchSemaphore(value: 0)

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        let (out, err) = try TestProcess.launch(process, try TestProcess.rangefetchBinary, ["--json"] + arguments,
                                                environment: environment)
        stderrData = AsyncData(err.fileHandleForReading)
        let handle = out.fileHandleForReading
        Thread.detachNewThread { [self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    record(line)
                }
            }
            readerDone.signal()
        }
    }

    private func record(_ line: String) {
        lock.withLock {
            lines.append(line)
            if let range = line.range(of: "\"received_bytes\":") {
                let digits = line[range.upperBound...].prefix(while: \.isNumber)
                if let value = Int64(digits) { received = max(received, value) }
            }
        }
    }

    var receivedBytes: Int64 { lock.withLock { received } }
    /// The process id, to read what `ps` shows of it.
    var pid: Int32 { process.processIdentifier }
    var outputLines: [String] { lock.withLock { lines } }

    /// Waits until the download reports at least `bytes` received; false on timeout or exit.
    func waitUntilReceived(_ bytes: Int64, timeoutSeconds: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if receivedBytes >= bytes { return true }
            if !process.isRunning { return receivedBytes >= bytes }
            usleep(5_000)
        }
        return false
    }

    /// Waits until `condition` holds while the process runs; false on timeout or exit.
    func waitUntil(timeoutSeconds: Double = 60, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline && process.isRunning {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for exit; returns the status (128+N for a signal, like a shell) and stderr.
    func wait(timeoutSeconds: Double = 120) throws -> (status: Int32, stderr: String) {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            throw TestFailure("rangefetch did not exit within \(timeoutSeconds) s")
        }
        process.waitUntilExit()
        readerDone.wait()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return (status, stderrData.text())
    }
}

/// Runs the CLI to completion.
func runCLI(_ arguments: [String], environment: [String: String] = [:], timeoutSeconds: Double = 120) throws -> TestProcess.Result {
    try TestProcess.run(try TestProcess.rangefetchBinary, arguments, environment: environment, timeoutSeconds: timeoutSeconds)
}
