import Dispatch
import Synchronization

/// Hashes a download while it arrives: segments finish out of order, but the contiguous prefix
/// of written bytes only grows, and this follows it on its own queue (reading back from the
/// page cache), so the digest is ready moments after the last byte lands.
package final class PrefixHasher: @unchecked Sendable {
    // @unchecked: `buffer` is touched only on `queue` (drain) or after `queue.sync {}` under the lock (finish).
    private let file: PartialFile
    private let queue = DispatchQueue(label: "rangefetch.hash")
    private let state: Mutex<State>
    private let buffer: UnsafeMutableRawBufferPointer

    private struct State {
        var digest: MultiDigest?
        var hashed: Int64 = 0
        var follower = PrefixFollower()
    }

    /// Set: hashing stops within one read (``finish(size:)`` then returns digests of a prefix,
    /// which the caller must not compare).
    private let cancellation: CancellationFlag?

    package init(file: PartialFile, algorithms: [DigestAlgorithm], cancellation: CancellationFlag? = nil) {
        self.file = file
        self.cancellation = cancellation
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileDigester.readBytes, alignment: 4096)
        self.state = Mutex(State(digest: MultiDigest(algorithms)))
    }

    deinit { buffer.deallocate() }

    /// Bytes `[0, end)` are written to the file; hash them soon. Never blocks.
    package func advance(to end: Int64) {
        if state.withLock({ $0.follower.advance(to: end, done: $0.hashed) }) { queue.async { self.drain() } }
    }

    /// Waits for hashing in flight and frees the digest contexts, on the calling thread: no
    /// OpenSSL object is left for the hash queue's thread to free once the download has
    /// returned (the process may be exiting by then).
    package func stop() {
        queue.sync {}
        state.withLock { $0.digest = nil }
    }

    /// Hashes up to `size` and returns the digests.
    package func finish(size: Int64) throws(SystemCallError) -> [DigestValue] {
        advance(to: size)
        queue.sync {}
        return try state.withLock { state throws(SystemCallError) -> [DigestValue] in
            if let failure = state.follower.failure { throw failure }
            guard let digest = state.digest else { return [] }
            if state.hashed < size {
                state.hashed = try FileDigester.hash(file, from: state.hashed, to: size, into: digest, buffer: buffer,
                                                        cancellation: cancellation)
            }
            state.digest = nil
            return digest.finalize()
        }
    }

    /// Bytes hashed so far.
    package var hashedBytes: Int64 { state.withLock { $0.hashed } }

    private func drain() {
        while true {
            let (from, to, digest) = state.withLock { state -> (Int64, Int64, MultiDigest?) in
                guard let digest = state.digest else {
                    state.follower.pause() // stopped: nothing to hash into
                    return (0, 0, nil)
                }
                guard let to = state.follower.next(done: state.hashed) else { return (0, 0, nil) }
                return (state.hashed, to, digest)
            }
            guard let digest else { return }
            do {
                let reached = try FileDigester.hash(file, from: from, to: to, into: digest, buffer: buffer,
                                                   cancellation: cancellation)
                state.withLock { $0.hashed = reached }
                if reached < to { state.withLock { $0.follower.pause() }; return } // cancelled
            } catch {
                state.withLock { $0.follower.fail(error) }
                return
            }
        }
    }
}
