import RangeFetchBase
import RangeFetchNetwork
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Sends a download to a pipe, terminal or device in order while its ranges arrive out of order.
///
/// Ranges land in a spool with no name (``PartialFile/init(anonymousIn:)``). This follows the
/// spool's written prefix on its own thread, copies it to the output with plain `write`s (a slow
/// reader blocks only that thread), hashes it on the way when digests are expected, and frees the
/// spool's blocks behind it. Ranges may start only below ``startLimit`` (what the reader has taken
/// plus the window), so the spool holds about one window however slow the reader is, and memory
/// stays what the page cache lends.
final class OrderedStream: @unchecked Sendable {
    // @unchecked: `buffer` and the output are touched only on `queue`; the rest is in `state`.
    private let spool: PartialFile
    private let output: Int32
    /// How the output is named in messages (`standard output`, a path).
    let outputName: String
    private let window: Int64
    private let queue = DispatchQueue(label: "rangefetch.stream")
    private let state: Mutex<State>
    private let sent = Atomic<Int64>(0)
    /// Set by ``stop(waitingAtMost:)``: the drain gives up at its next step or wait.
    private let stopping = Atomic<Bool>(false)
    private let buffer: UnsafeMutableRawBufferPointer
    /// Told when bytes went out (`false`: the engine may start more ranges) or the output
    /// failed (`true`: the download should stop).
    private let wake: @Sendable (_ failed: Bool) -> Void

    private struct State {
        var digest: MultiDigest?
        var follower = PrefixFollower()
        /// When the output took its first byte (`MonotonicTime`).
        var firstSentAt: Double?
    }

    /// Spool blocks are freed in steps of this many bytes behind what was sent.
    static let releaseStepBytes: Int64 = 8 << 20

    /// - Parameters:
    ///   - output: a descriptor open for writing; the caller closes it after ``finish(size:)``.
    ///   - window: how far ahead of what the reader has taken ranges may start, bytes.
    init(spool: PartialFile, output: Int32, outputName: String, window: Int64, algorithms: [DigestAlgorithm],
         wake: @escaping @Sendable (_ failed: Bool) -> Void) {
        self.spool = spool
        self.output = output
        self.outputName = outputName
        self.window = window
        self.wake = wake
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileDigester.readBytes, alignment: 4096)
        state = Mutex(State(digest: algorithms.isEmpty ? nil : MultiDigest(algorithms)))
    }

    deinit { buffer.deallocate() }

    /// Bytes the output has taken.
    var sentBytes: Int64 { sent.load(ordering: .acquiring) }

    /// When the output took its first byte (`MonotonicTime`); `nil` until it has.
    var firstSentAt: Double? { state.withLock { $0.firstSentAt } }

    /// Ranges starting at or beyond this offset must wait.
    var startLimit: Int64 { sentBytes + window }

    /// The output failed (the reader went away, a device error); the download should stop.
    var failure: SystemCallError? { state.withLock { $0.follower.failure } }

    /// Bytes `[0, end)` are in the spool; send them soon. Never blocks.
    func advance(to end: Int64) {
        if state.withLock({ $0.follower.advance(to: end, done: sentBytes) }) { queue.async { self.drain() } }
    }

    /// Ends the copying: the drain stops at its next step (or its next wait for a full output),
    /// and the digest contexts are freed here. `true` once the drain has ended; `false` when it
    /// is still stuck after `seconds` (a blocking write to a reader that stopped reading), and
    /// then the caller must leave the output and the spool open: closing them would let a late
    /// write or read reach whatever file takes their descriptor numbers next.
    func stop(waitingAtMost seconds: Double) -> Bool {
        stopping.store(true, ordering: .releasing)
        state.withLock { $0.follower.pause() }
        let drained = DispatchGroup()
        queue.async(group: drained) {}
        guard drained.wait(timeout: .now() + seconds) == .success else { return false }
        state.withLock { $0.digest = nil }
        return true
    }

    /// Sends everything up to `size` (waiting for a slow reader) and returns the digests of what
    /// was sent.
    func finish(size: Int64) throws(SystemCallError) -> [DigestValue] {
        advance(to: size)
        queue.sync {}
        return try state.withLock { state throws(SystemCallError) -> [DigestValue] in
            if let failure = state.follower.failure { throw failure }
            guard sentBytes >= size else {
                throw SystemCallError(function: "pread", path: spool.path, errno: EIO)
            }
            defer { state.digest = nil }
            return state.digest?.finalize() ?? []
        }
    }

    private func drain() {
        var released = sentBytes / Self.releaseStepBytes * Self.releaseStepBytes
        while !stopping.load(ordering: .acquiring) {
            let (from, to, digest) = state.withLock { state -> (Int64, Int64, MultiDigest?) in
                let from = sentBytes
                guard let to = state.follower.next(done: from) else { return (from, from, nil) }
                return (from, to, state.digest)
            }
            guard to > from else { return }
            do throws(SystemCallError) {
                if digest == nil, !copyOnly {
                    // Nothing to hash: the kernel moves the spool's pages to the output
                    // (`sendfile`), without a copy through this process.
                    if try sendDirect(from: from, count: min(to - from, Self.sendfileBytes)) { continue }
                    copyOnly = true
                }
                let count = Int(min(Int64(buffer.count), to - from))
                let read = try spool.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), at: from)
                guard read > 0 else { throw SystemCallError(function: "pread", path: spool.path, errno: EIO) }
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<read])
                try send(bytes)
                digest?.update(bytes)
            } catch {
                // Stopped on purpose: the download is over, nothing to report or cancel.
                if stopping.load(ordering: .acquiring) { return }
                state.withLock { $0.follower.fail(error) }
                wake(true)
                return
            }
            let done = sentBytes / Self.releaseStepBytes * Self.releaseStepBytes
            if done > released {
                spool.release(from: released, length: done - released)
                released = done
                wake(false)
            }
        }
    }

    /// `sendfile` was refused for this output (`EINVAL`, `ENOSYS`): copy through the buffer.
    private var copyOnly = false
    /// Bytes handed to one `sendfile` at most.
    static let sendfileBytes: Int64 = 8 << 20

    /// Sends `count` bytes of the spool from `offset` with `sendfile`, counting them as they go;
    /// `false` when the output does not take `sendfile` (nothing was sent).
    private func sendDirect(from offset: Int64, count: Int64) throws(SystemCallError) -> Bool {
        var position = off_t(offset)
        let end = offset + count
        while Int64(position) < end {
            do throws(SystemCallError) {
                let moved = try SystemCall.check("sendfile", path: outputName) {
                    sendfile(output, spool.descriptor, &position, Int(end - Int64(position)))
                }
                guard moved > 0 else { throw SystemCallError(function: "sendfile", path: outputName, errno: EIO) }
                noteSent(Int64(moved))
            } catch where error.errno == EAGAIN {
                try waitForRoom()
            } catch where (error.errno == EINVAL || error.errno == ENOSYS) && Int64(position) == offset {
                return false
            }
        }
        return true
    }

    /// Writes all of `bytes` to the output, counting them as sent as they go, and waiting while
    /// a non-blocking output is full.
    private func send(_ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        var done = 0
        while done < bytes.count {
            do {
                let written = try FileDescriptor(output, path: outputName).write(UnsafeRawBufferPointer(rebasing: bytes[done...]))
                done += written
                noteSent(Int64(written))
            } catch where error.errno == EAGAIN {
                try waitForRoom()
            }
        }
    }

    /// Counts `bytes` as sent, and the moment of the first.
    private func noteSent(_ bytes: Int64) {
        if sent.add(bytes, ordering: .releasing).oldValue == 0, bytes > 0 {
            let now = MonotonicTime.now()
            state.withLock { $0.firstSentAt = now }
        }
    }

    /// Waits up to 100 ms for room in a full non-blocking output; throws once the stream is
    /// being stopped.
    private func waitForRoom() throws(SystemCallError) {
        if stopping.load(ordering: .acquiring) {
            throw SystemCallError(function: "write", path: outputName, errno: ECANCELED)
        }
        _ = try? FileDescriptor(output, path: outputName).wait(for: POLLOUT, milliseconds: 100)
    }
}
