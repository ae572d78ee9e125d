import RangeFetchBase
import RangeFetchNetwork

/// The events of a running download or batch, as an `AsyncSequence`: it ends after `.finished`,
/// throws the download's ``DownloadError`` when it fails, and when the task iterating it is
/// cancelled it throws the cancellation's error (category `.interrupted`) once the download has
/// stopped and let go of its files, so a cancel never looks like success and the same file can
/// be started again at once. Ending the iteration early (a `break`) cancels the download.
public struct DownloadEventStream<Event: Sendable>: AsyncSequence, Sendable {
    /// One event.
    public typealias Element = Event
    private let stream: AsyncThrowingStream<Event, any Error>
    /// The producer: returns when the last event is out, throws the download's error.
    private let producer: Task<Void, any Error>

    /// Runs `body` in a task, handing it a function that sends events.
    init(_ body: @escaping @Sendable (_ send: @escaping @Sendable (Event) -> Void) async throws -> Void) {
        let (stream, continuation) = AsyncThrowingStream<Event, any Error>.makeStream()
        let producer = Task {
            do {
                try await body { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
                throw error
            }
        }
        continuation.onTermination = { _ in producer.cancel() }
        self.stream = stream
        self.producer = producer
    }

    /// Iterates the events; see ``DownloadEventStream``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate var base: AsyncThrowingStream<Event, any Error>.AsyncIterator
        fileprivate let producer: Task<Void, any Error>

        /// The next event; `nil` after the last; throws the download's error.
        public mutating func next() async throws -> Event? {
            // Cancelling the iterating task stops the download: said here as well as through the
            // stream's termination handler, which a cancel does not always reach (seen: 1 run in
            // 3 under load, the download ran on to success).
            // (A handler installed in an already cancelled task runs at once.)
            let producer = self.producer
            let event = try await withTaskCancellationHandler {
                try await base.next()
            } onCancel: {
                producer.cancel()
            }
            if let event { return event }
            // The stream ended: after its last event, or because this task was cancelled. Either
            // way the producer's outcome decides; waiting for it also waits for the files to close.
            try await producer.value
            return nil
        }
    }

    /// An iterator over the events.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), producer: producer)
    }
}
