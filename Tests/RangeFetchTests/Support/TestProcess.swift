import Foundation
import Testing
import RangeFetch

/// Runs a program to completion, capturing its output; fails the test on a timeout.
struct TestProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    timeoutSeconds: Double = 120) throws -> Result {
        let process = Process()
        let (out, err) = try launch(process, executable, arguments, environment: environment)
        // Read both pipes concurrently so a chatty child never blocks on a full pipe.
        let outData = AsyncData(out.fileHandleForReading)
        let errData = AsyncData(err.fileHandleForReading)
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw TestFailure("\(executable) \(arguments) timed out after \(timeoutSeconds) s")
        }
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: outData.text(), stderr: errData.text())
    }

    /// Starts `process` with piped stdout/stderr, no stdin, and `environment` over ours.
    static func launch(_ process: Process, _ executable: String, _ arguments: [String],
                       environment: [String: String]) throws -> (stdout: Pipe, stderr: Pipe) {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (out, err)
    }

    /// Starts a server with its output discarded and waits (up to 10 s) until it accepts
    /// connections on 127.0.0.1:`port`; otherwise stops it and throws, adding `detail()`.
    /// The server runs with SIGTERM and SIGINT unblocked: a process spawned from a Dispatch
    /// thread inherits that thread's mask, where they are blocked, and Apache then ignores the
    /// SIGTERM that stops it (a SIGKILL after the grace time orphans its workers).
    static func startServer(_ executable: String, _ arguments: [String], port: Int,
                            detail: () -> String = { "" }) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", unblockAndExec, executable] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !isListening(port: port) {
            guard process.isRunning, Date() < deadline else {
                stopProcess(process, signal: SIGTERM, graceSeconds: 2)
                throw TestFailure("\(executable) did not start on port \(port)\(detail())")
            }
            usleep(20_000)
        }
        return process
    }

    private static let unblockAndExec = """
        import os, signal, sys
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        os.execv(sys.argv[1], sys.argv[1:])
        """

    /// Finds the `rangefetch` binary built beside the test bundle (or `$RANGEFETCH_BIN`).
    static var rangefetchBinary: String {
        get throws {
            if let path = ProcessInfo.processInfo.environment["RANGEFETCH_BIN"] { return path }
            var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            if directory.lastPathComponent == "MacOS" { directory = directory.deletingLastPathComponent() }
            for candidate in [directory.appendingPathComponent("rangefetch").path,
                              directory.deletingLastPathComponent().appendingPathComponent("rangefetch").path]
            where FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
            throw TestFailure("rangefetch binary not found beside \(directory.path); run `swift build` first or set RANGEFETCH_BIN")
        }
    }
}

/// Collects everything a file handle yields until EOF, on a background thread.
final class AsyncData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread {
            let all = handle.readDataToEndOfFile()
            self.lock.withLock { self.data = all }
            self.done.signal()
        }
    }

    func text() -> String {
        done.wait()
        done.signal()
        return lock.withLock { String(decoding: data, as: UTF8.self) }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, expecting it to fail with a ``DownloadError``; records an issue otherwise.
func expectDownloadError<T>(_ body: () async throws -> T, sourceLocation: SourceLocation = #_sourceLocation) async -> DownloadError? {
    do {
        _ = try await body()
        Issue.record("expected a DownloadError, but it succeeded", sourceLocation: sourceLocation)
    } catch let error as DownloadError {
        return error
    } catch {
        Issue.record("expected a DownloadError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// A value shared with `@Sendable` event handlers in tests.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&value) } }
    var current: Value { lock.withLock { value } }
}

/// Stops a child by pid: `signal` first, SIGKILL after `graceSeconds`, then reaps it.
func stopProcess(_ process: Process, signal: Int32, graceSeconds: Double) {
    guard process.isRunning else { return }
    kill(process.processIdentifier, signal)
    let deadline = Date().addingTimeInterval(graceSeconds)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
}
