import Foundation
import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``DownloadQueue`` against the fault server, its bodies paced so that a download is still
/// running when it is paused, removed or requeued: what each operation leaves on disk, what the
/// server was asked for, and the order of the queue's events.
@Suite(.serialized)
final class DownloadQueueTests {
    let out: TemporaryDirectory
    let server: FaultServer
    static let size: Int64 = 8 << 20

    init() throws {
        out = try TemporaryDirectory()
        server = try FaultServer()
    }

    deinit { server.stop() }

    /// Two connections per file at 2 MB/s each: 8 MiB takes about 2 s.
    var options: DownloadOptions {
        var options = DownloadOptions()
        options.destination = .directory(out.path)
        options.connections = .fixed(2)
        return options
    }

    func url(_ name: String) -> String { server.dataURL(size: Self.size, name: name, "rate=2000000") }

    /// The queue's events as they come, named without their payloads (`"paused #1"`).
    final class EventLog: Sendable {
        private final class Names: Sendable {
            let list = Mutex<[String]>([])
        }
        private let names = Names()
        private let reader: Task<Void, Never>

        init(_ events: AsyncStream<QueueEvent>) {
            let names = self.names
            reader = Task {
                for await event in events {
                    guard let name = EventLog.name(event) else { continue }
                    names.list.withLock { $0.append(name) }
                }
            }
        }

        static func name(_ event: QueueEvent) -> String? {
            switch event {
            case .added(let id, _, let status): "added \(id) \(status)"
            case .started(let id): "started \(id)"
            case .download(let id, _): "download \(id)"
            case .paused(let id): "paused \(id)"
            case .requeued(let id): "requeued \(id)"
            case .completed(let id, _): "completed \(id)"
            case .failed(let id, let error): "failed \(id): \(error.message)"
            case .removed(let id): "removed \(id)"
            }
        }

        var all: [String] { names.list.withLock { $0 } }

        /// Waits (up to `seconds`) until `name` has been said; throws naming what was said.
        /// Suspends between looks rather than blocking: the reader needs a thread of the
        /// cooperative pool, which other tests' synchronous waits may be holding.
        func wait(for name: String, seconds: Double = 30) async throws {
            let deadline = Date().addingTimeInterval(seconds)
            while !all.contains(name) {
                guard Date() < deadline else { throw TestFailure("no \"\(name)\" within \(seconds) s: \(all)") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        /// The events sequence ended (the queue was shut down).
        func ended() async { await reader.value }
    }

    /// Waits until the queue's entry `id` has received at least `bytes`.
    /// Polls on this thread rather than suspending: the download runs on its own thread, and a
    /// suspended test may not be scheduled again before it has ended (the tests act on it
    /// within the second or so left).
    func waitForBytes(_ queue: DownloadQueue, _ id: DownloadID, atLeast bytes: Int64, seconds: Double = 30) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while (queue.entries.first { $0.id == id }?.receivedBytes ?? 0) < bytes {
            guard Date() < deadline else { throw TestFailure("\(id) did not reach \(bytes) bytes: \(queue.entries)") }
            usleep(20_000)
        }
    }

    /// Pausing a running download stops it (said only once it has stopped), lets the next one
    /// run, keeps its partial file and journal; resuming it fetches only what was not on disk:
    /// the server sends the two files once, plus at most what was in flight at the pause.
    @Test func pauseThenResumeFetchesNothingTwice() async throws {
        let queue = DownloadQueue(options: options, maximumActive: 1)
        let log = EventLog(queue.events())
        // b from a server of its own: a's server alone shows what a was sent.
        let other = try FaultServer()
        defer { other.stop() }
        let a = try queue.add(url("a.bin")), b = try queue.add(other.dataURL(size: Self.size, name: "b.bin", "rate=2000000"))
        try waitForBytes(queue, a, atLeast: 3 << 20)
        try queue.pause(a)
        try await log.wait(for: "paused \(a)")
        #expect(queue.status(a) == .paused)
        // "Paused" is said once no more bytes arrive: nothing of a's follows it.
        let atPause = try #require(queue.entries.first { $0.id == a }?.receivedBytes)
        usleep(300_000)
        #expect(queue.entries.first { $0.id == a }?.receivedBytes == atPause)
        let said = log.all
        #expect(said.last { $0.hasPrefix("download \(a)") || $0 == "paused \(a)" } == "paused \(a)",
                "events of a's download came after it was said paused: \(said)")
        #expect(said.firstIndex(of: "paused \(a)")! < said.firstIndex(of: "started \(b)") ?? .max,
                "the next download started before the pause landed: \(said)")
        #expect(out.exists("a.bin.part") && out.exists("a.bin.part.rfjournal"))
        try queue.resume(a)
        try await log.wait(for: "completed \(b)")
        try await log.wait(for: "completed \(a)")
        // Read before the checks below fetch the expected bytes from the same server.
        let served = try server.stats().body_bytes, servedB = try other.stats().body_bytes
        try server.expectFile(out.file("a.bin"), size: Self.size, sourceLocation: #_sourceLocation)
        try other.expectFile(out.file("b.bin"), size: Self.size, sourceLocation: #_sourceLocation)
        #expect(!out.exists("a.bin.part") && !out.exists("a.bin.part.rfjournal"))
        // In flight at the pause: what the two connections' socket buffers held, at most 1 MiB each.
        #expect(served <= Self.size + (2 << 20), "served \(served) for a file of \(Self.size) (\(atPause) held at the pause)")
        #expect(servedB == Self.size)
        #expect(log.all.filter { $0.hasPrefix("started \(a)") }.count == 2, "\(log.all)")
    }

    /// Removing a running download stops it and deletes its partial file and journal; keeping
    /// its files leaves them for a later resume.
    @Test(arguments: [false, true])
    func removingARunningDownload(keepingFiles: Bool) async throws {
        let queue = DownloadQueue(options: options, maximumActive: 2)
        let log = EventLog(queue.events())
        let a = try queue.add(url("r.bin"))
        try waitForBytes(queue, a, atLeast: 3 << 20)
        try queue.remove(a, keepingFiles: keepingFiles)
        try await log.wait(for: "removed \(a)")
        #expect(queue.status(a) == nil && queue.entries.isEmpty)
        #expect(!out.exists("r.bin"))
        #expect(out.exists("r.bin.part") == keepingFiles && out.exists("r.bin.part.rfjournal") == keepingFiles)
        #expect(throws: QueueError.self) { try queue.resume(a) }
    }

    /// Lowering how many run at once stops the last running ones, which wait and start again
    /// (from their journals) as room comes; every file ends exact.
    @Test func loweringTheLimitRequeuesTheLastRunning() async throws {
        let queue = DownloadQueue(options: options, maximumActive: 3)
        let log = EventLog(queue.events())
        let ids = try ["x.bin", "y.bin", "z.bin"].map { try queue.add(url($0)) }
        try waitForBytes(queue, ids[2], atLeast: 3 << 20)
        queue.maximumActive = 1
        try await log.wait(for: "requeued \(ids[1])")
        try await log.wait(for: "requeued \(ids[2])")
        #expect(queue.entries.map(\.status) == [.active, .waiting, .waiting])
        for id in ids { try await log.wait(for: "completed \(id)") }
        let served = try server.stats().body_bytes
        for name in ["x.bin", "y.bin", "z.bin"] {
            try server.expectFile(out.file(name), size: Self.size, sourceLocation: #_sourceLocation)
        }
        #expect(served <= 3 * Self.size + 2 * (2 << 20), "served \(served) for three files of \(Self.size)")
    }

    /// Shutting down stops every running download (their journals written) and ends the events;
    /// a new queue given the same URL resumes from what is on disk.
    @Test func aShutDownQueuesDownloadsResumeInTheNext() async throws {
        let queue = DownloadQueue(options: options, maximumActive: 1)
        let log = EventLog(queue.events())
        let a = try queue.add(url("s.bin"))
        try waitForBytes(queue, a, atLeast: 3 << 20)
        await queue.shutdown()
        await log.ended()
        #expect(log.all.last { !$0.hasPrefix("download") } == "paused \(a)", "\(log.all)")
        #expect(queue.status(a) == .paused && out.exists("s.bin.part.rfjournal"))

        let next = DownloadQueue(options: options)
        let nextLog = EventLog(next.events())
        let again = try next.add(url("s.bin"))
        try await nextLog.wait(for: "completed \(again)")
        let served = try server.stats().body_bytes
        try server.expectFile(out.file("s.bin"), size: Self.size, sourceLocation: #_sourceLocation)
        #expect(served <= Self.size + (2 << 20), "served \(served) for a file of \(Self.size)")
        await next.shutdown()
    }

    /// Every thread of Swift's cooperative pool blocked by the caller (synchronous waits, as an
    /// app or another test may hold them) does not stall the queue: a download added from one of
    /// them starts, runs and ends on a thread of its own. (Started through a task, it waited for a
    /// pool thread, and here none came until the waits gave up.)
    @Test func aBlockedCooperativePoolDoesNotStallTheQueue() async throws {
        let queue = DownloadQueue(options: options, maximumActive: 1)
        let width = max(1, ProcessInfo.processInfo.activeProcessorCount)
        final class Meeting: Sendable {
            let arrived = Atomic<Int>(0)
            let added = Mutex<DownloadID?>(nil)
        }
        let meeting = Meeting()
        let name = url("p.bin")
        let seen = await withTaskGroup(of: QueueStatus?.self) { group in
            for blocker in 0..<width {
                group.addTask {
                    // Every pool thread taken (or 10 s gone: another test holds one).
                    meeting.arrived.add(1, ordering: .sequentiallyConsistent)
                    let meet = Date().addingTimeInterval(10)
                    while meeting.arrived.load(ordering: .sequentiallyConsistent) < width, Date() < meet { usleep(1_000) }
                    if blocker == 0 { meeting.added.withLock { $0 = try? queue.add(name) } }
                    // A synchronous wait, holding this pool thread, for the download to end.
                    let deadline = Date().addingTimeInterval(30)
                    var status: QueueStatus?
                    repeat {
                        usleep(20_000)
                        status = meeting.added.withLock { $0 }.flatMap { queue.status($0) }
                    } while status != .complete && status != .failed && Date() < deadline
                    return status
                }
            }
            return await group.reduce(into: [QueueStatus?]()) { $0.append($1) }
        }
        #expect(seen.allSatisfy { $0 == .complete }, "statuses seen by the blocked threads: \(seen)")
        try server.expectFile(out.file("p.bin"), size: Self.size, sourceLocation: #_sourceLocation)
        await queue.shutdown()
    }

    /// A URL that could never be downloaded is refused when added, naming it.
    @Test func aBadURLIsRefusedWhenAdded() {
        let queue = DownloadQueue(options: options)
        #expect(throws: DownloadError.self) { try queue.add("ftp://127.0.0.1/x") }
        #expect(queue.entries.isEmpty)
    }
}
