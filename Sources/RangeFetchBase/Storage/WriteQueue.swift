import Dispatch
import Synchronization

/// Writes full buffers to the partial file on background lanes, so the transfer thread goes on
/// receiving while the disk works (direct writes block for the device's latency).
///
/// Writes with the same `lane` key complete in submission order (one serial queue per lane), so
/// a segment's bytes land as a growing prefix. Each buffer goes back to its ``BufferPool`` as
/// soon as its write is done. Completions are collected for the transfer thread,
/// which takes them with ``takeCompleted()`` after ``wake`` has interrupted its poll. At most
/// ``maximumInFlight`` writes are queued: ``submit(_:count:at:lane:token:)`` waits for room, which
/// is the back-pressure of a disk slower than the network.
package final class WriteQueue: Sendable {
    /// A finished write: how many bytes, for whom, and the error if it failed.
    package struct Completion: Sendable {
        package var token: Int
        package var bytes: Int
        package var error: SystemCallError?

        package init(token: Int, bytes: Int, error: SystemCallError? = nil) {
            self.token = token
            self.bytes = bytes
            self.error = error
        }
    }

    private struct Job: @unchecked Sendable {
        var buffer: UnsafeMutableRawBufferPointer
        var start: Int
        var count: Int
        var offset: Int64
        var token: Int
    }

    package let maximumInFlight: Int
    private let file: PartialFile
    private let pool: BufferPool
    private let lanes: [DispatchQueue]
    private let room: DispatchSemaphore
    private let completed = Mutex<[Completion]>([])
    private let wake: @Sendable () -> Void

    /// - Parameters:
    ///   - lanes: parallel writers (the device's queue depth we use).
    ///   - maximumInFlight: writes queued or running at once.
    ///   - wake: called on a lane after each write; interrupts the transfer thread's wait.
    package init(file: PartialFile, pool: BufferPool, lanes: Int = 2, maximumInFlight: Int = 4,
         wake: @escaping @Sendable () -> Void) {
        self.file = file
        self.pool = pool
        self.lanes = (0..<max(1, lanes)).map { DispatchQueue(label: "rangefetch.write.\($0)") }
        self.maximumInFlight = max(1, maximumInFlight)
        room = DispatchSemaphore(value: self.maximumInFlight)
        self.wake = wake
    }

    /// Queues `buffer[start ..< start + count]` for writing at file `offset`; the buffer then
    /// belongs to the queue, which gives it back to the pool. Waits while the queue is full.
    package func submit(_ buffer: UnsafeMutableRawBufferPointer, start: Int, count: Int, at offset: Int64, lane: Int, token: Int) {
        room.wait()
        let job = Job(buffer: buffer, start: start, count: count, offset: offset, token: token)
        lanes[lane % lanes.count].async { self.perform(job) }
    }

    private func perform(_ job: Job) {
        var failure: SystemCallError?
        do {
            try file.write(UnsafeRawBufferPointer(rebasing: job.buffer[job.start..<job.start + job.count]), at: job.offset)
        } catch {
            failure = error
        }
        pool.give(job.buffer)
        completed.withLock { $0.append(Completion(token: job.token, bytes: job.count, error: failure)) }
        room.signal()
        wake()
    }

    /// The writes finished since the last call, in completion order.
    package func takeCompleted() -> [Completion] {
        completed.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }

    /// Waits until every queued write has finished (their completions are then ready to take).
    package func waitUntilIdle() {
        for lane in lanes { lane.sync {} }
    }
}
