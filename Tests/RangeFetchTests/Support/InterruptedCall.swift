import Foundation
import Synchronization
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A blocking call made on a thread of its own, which a test interrupts with a real signal:
/// `SIGUSR1`, caught by a handler installed without `SA_RESTART`, so the kernel ends a blocked
/// `read` with `EINTR` and a blocked `write` that moved some bytes with a short count.
///
/// The thread's state is read from `/proc/self/task/TID/` (no sleeps guessed at):
/// ``waitUntilBlocked(in:)`` waits for it to sleep in the system call named, and
/// ``interruptAndWaitUntilBlockedAgain(in:)`` sends the signal and waits until the handler ran
/// and the thread sleeps in that call once more (its count of voluntary context switches rose):
/// a call that gave up would have returned instead.
final class InterruptedCall<Value: Sendable>: @unchecked Sendable {
    /// Generous bounds for a loaded 2-core machine; only a broken call takes that long.
    static var deadlineSeconds: Double { 30 }

    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let identity = Mutex<(thread: pthread_t, tid: String)?>(nil)
    private let outcome = Mutex<Value?>(nil)

    /// Starts `call` on a new thread; the handler is ``SignalWithoutRestart``'s, installed by the caller.
    init(_ call: @escaping @Sendable () -> Value) {
        let thread = Thread { [self] in
            // A thread starts with its creator's signal mask, which may block SIGUSR1.
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            // "/proc/thread-self" links to "PID/task/TID".
            var target = [CChar](repeating: 0, count: 64)
            let length = readlink("/proc/thread-self", &target, target.count - 1)
            let link = String(decoding: target.prefix(max(length, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            identity.withLock { $0 = (pthread_self(), String(link.split(separator: "/").last ?? "")) }
            started.signal()
            let value = call()
            outcome.withLock { $0 = value }
            finished.signal()
        }
        thread.start()
        started.wait()
    }

    private var tid: String { identity.withLock { $0?.tid ?? "" } }

    /// The system calls a test waits in, by number (`/proc/.../syscall` shows the number).
    enum Call {
        case read, write, poll
        var number: Int {
            #if arch(x86_64)
            return switch self { case .read: 0; case .write: 1; case .poll: 7 }
            #else
            return switch self { case .read: 63; case .write: 64; case .poll: 73 } // ppoll
            #endif
        }
    }

    /// The thread's state letter (`S`: sleeping), the system call it is in (`nil` when running
    /// in user space) and its voluntary context switches.
    private func sample() -> (state: Character?, call: Int?, switches: Int?) {
        let stat = FileSystem.smallFileText("/proc/self/task/\(tid)/stat") ?? ""
        let state = stat.range(of: ") ").flatMap { stat[$0.upperBound...].first }
        let syscall = FileSystem.smallFileText("/proc/self/task/\(tid)/syscall") ?? ""
        let call = syscall.split(separator: " ").first.flatMap { Int($0) }
        let status = FileSystem.smallFileText("/proc/self/task/\(tid)/status") ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
        let switches = line.flatMap { Int($0.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") }
        return (state, call, switches)
    }

    private func waitFor(_ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(Self.deadlineSeconds)
        while !condition() {
            guard Date() < deadline else {
                throw TestFailure("thread \(tid) never reached the expected state: \(sample()), \(SignalWithoutRestart.caught) signals caught")
            }
            usleep(2_000)
        }
    }

    /// Waits until the thread sleeps in `call`.
    func waitUntilBlocked(in call: Call) throws {
        try waitFor {
            let now = sample()
            return now.state == "S" && now.call == call.number
        }
    }

    /// Sends `SIGUSR1` to the thread, and waits until the handler ran and the thread sleeps in
    /// `call` again after waking for it.
    func interruptAndWaitUntilBlockedAgain(in call: Call) throws {
        let before = sample().switches ?? 0
        let caught = SignalWithoutRestart.caught
        try sendSignal()
        try waitFor {
            let now = sample()
            return SignalWithoutRestart.caught > caught && now.state == "S" && now.call == call.number && (now.switches ?? 0) > before
        }
    }

    /// Sends `SIGUSR1` to the thread and waits until the handler ran.
    func interrupt() throws {
        let caught = SignalWithoutRestart.caught
        try sendSignal()
        try waitFor { SignalWithoutRestart.caught > caught }
    }

    private func sendSignal() throws {
        guard let thread = identity.withLock({ $0?.thread }), pthread_kill(thread, SIGUSR1) == 0 else {
            throw TestFailure("pthread_kill failed")
        }
    }

    /// What the call returned; fails the test if it has not within the deadline.
    func result() throws -> Value {
        guard finished.wait(timeout: .now() + Self.deadlineSeconds) == .success, let value = outcome.withLock({ $0 }) else {
            throw TestFailure("the call did not return")
        }
        return value
    }
}

/// `SIGUSR1` caught by a handler that counts it, installed without `SA_RESTART` for the length of
/// a test, and `SIGPIPE` ignored (a test that fails leaves a writer blocked on a pipe it then
/// closes), then the previous dispositions restored.
enum SignalWithoutRestart {
    private static let count = Atomic<Int>(0)

    static var caught: Int { count.load(ordering: .acquiring) }

    static func during<Value>(_ body: () throws -> Value) throws -> Value {
        _ = caught // initialized before the handler can touch it
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in SignalWithoutRestart.count.add(1, ordering: .releasing) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        guard sigaction(SIGUSR1, &action, &previous) == 0 else { throw TestFailure("sigaction failed") }
        defer { sigaction(SIGUSR1, &previous, nil) }
        let pipeAction = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, pipeAction) }
        return try body()
    }
}

/// A pipe's two ends, closed when done.
final class TestPipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TestFailure("pipe failed") }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
