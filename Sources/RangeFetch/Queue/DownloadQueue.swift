import RangeFetchBase
import RangeFetchNetwork
import Synchronization

/// Many downloads kept in order, ``maximumActive`` of them running at once, that can be added,
/// paused, resumed, removed and reordered while they run: what an app's download manager (and
/// `rangefetch daemon`) stands on.
///
/// ```swift
/// let queue = DownloadQueue(options: options, maximumActive: 3)
/// let events = queue.events()
/// let id = try queue.add("https://example.com/big.iso")
/// for await event in events {
///     if case .completed(id, let summary) = event { print(summary.path); break }
/// }
/// try queue.pause(other)      // returns at once; `.paused(other)` follows when no bytes arrive
/// await queue.shutdown()      // every running download stopped, its journal on disk
/// ```
///
/// The running downloads share one connection budget (``DownloadOptions/maximumConnections``
/// in all, ``DownloadOptions/maximumConnectionsPerHost`` to one host, earlier downloads first),
/// one TLS session and DNS cache, and one pool of write buffers. A paused download keeps its
/// `NAME.part` and journal: resuming it (here or in a later process, by adding the same URL)
/// fetches only what is not on disk. Files under 2 MiB keep no journal and start over.
///
/// The decisions are `QueueBook`'s (pure, table-tested); this type carries them out. Each
/// running download has a thread of its own (`DownloadThreads`), started by the call that starts
/// it and saying its end itself: none waits for a thread of Swift's cooperative pool, so a caller
/// blocking the pool does not stall the queue. ``shutdown()`` joins them all.
public final class DownloadQueue: Sendable {
    private struct Item: Sendable {
        var url: String
        /// `url` with any secret in it redacted, worked out once: status calls read it often.
        var redactedURL: String
        /// The URL parsed once, its secrets bound to its origin.
        var source: ResolvedSource
        var options: DownloadOptions
        /// Set while it runs: tripping it stops the download.
        var cancellation: CancellationFlag?
        /// Its thread has not said its end yet.
        var isRunning = false
        var path: String?
        var receivedBytes: Int64 = 0
        var totalBytes: Int64?
        var bytesPerSecond: Double = 0
        var connections = 0
        var error: DownloadError?
    }

    private struct State: Sendable {
        var book: QueueBook
        var items: [DownloadID: Item] = [:]
        var subscribers: [Int: AsyncStream<QueueEvent>.Continuation] = [:]
        var nextSubscriber = 0
        var shuttingDown = false
    }

    private let state: Mutex<State>
    private let options: DownloadOptions
    private let budget: ConnectionBudget
    private let claims = PathClaims()
    private let buffers: BufferPool
    /// TLS sessions and DNS answers, shared by every download's connections.
    private let share = CurlShare()
    private let s3: S3ConfigurationOnce
    private let transferNiceness: Int32
    private let threads = DownloadThreads()

    /// A queue whose downloads use `options` (each may have its own, see ``add(_:options:paused:at:)``),
    /// `maximumActive` of them at once.
    ///
    /// `transferNiceness` above 0 runs each download's thread at that much lower CPU priority
    /// (its nice value) than the process's other threads: a program that answers people or other
    /// programs while its downloads saturate the CPU (a daemon's RPC) stays quick to answer. On
    /// an idle CPU it costs the downloads nothing.
    public init(options: DownloadOptions = DownloadOptions(), maximumActive: Int = 5, transferNiceness: Int32 = 0) {
        self.options = options
        self.transferNiceness = max(0, transferNiceness)
        state = Mutex(State(book: QueueBook(maximumActive: maximumActive)))
        budget = ConnectionBudget(total: options.maximumConnections, perHost: options.maximumConnectionsPerHost)
        buffers = BufferPool(flushBytes: DownloadSession.writeBufferBytes(options))
        s3 = S3ConfigurationOnce(given: options.s3)
    }

    /// The queue's events from now on, until ``shutdown()`` has stopped every download. Each call
    /// gives a sequence of its own; events are kept for a reader that falls behind.
    public func events() -> AsyncStream<QueueEvent> {
        let (stream, continuation) = AsyncStream<QueueEvent>.makeStream()
        let key = state.withLock { state in
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Adds `url` (http, https or s3) at the end of the queue (or at `position`), with the queue's
    /// options or `options`; it starts when its turn comes, or waits paused.
    /// - Throws: a ``DownloadError`` for options or a URL that could never be downloaded.
    @discardableResult
    public func add(_ url: String, options: DownloadOptions? = nil, paused: Bool = false,
                    at position: Int? = nil) throws(DownloadError) -> DownloadID {
        let item = try Self.item(url, options: options ?? self.options, s3: s3)
        var added = DownloadID(0)
        apply { state in
            let (id, actions) = state.book.add(paused: paused, at: position)
            state.items[id] = item
            added = id
            send(.added(id, url: item.redactedURL, status: paused ? .paused : .waiting), in: state)
            return actions
        }
        return added
    }

    /// `url` parsed with `options` (validated), its secrets bound to its origin.
    private static func item(_ url: String, options: DownloadOptions, s3: S3ConfigurationOnce) throws(DownloadError) -> Item {
        try options.validate()
        let source = try ResolvedSource(object: url, request: options.request, s3: s3)
        return Item(url: url, redactedURL: Redaction.url(url), source: source, options: options.bound(to: source))
    }

    /// Pauses `id`: a waiting download waits paused; a running one stops, and ``QueueEvent/paused(_:)``
    /// follows once no more of its bytes arrive.
    public func pause(_ id: DownloadID) throws(QueueError) {
        try applyRefusable { state throws(QueueError) in try state.book.pause(id) }
    }

    /// Resumes a paused (or failed) download: it waits for its turn and goes on from its journal.
    public func resume(_ id: DownloadID) throws(QueueError) {
        try applyRefusable { state throws(QueueError) in try state.book.resume(id) }
    }

    /// Removes `id`, stopping it if it runs; its partial file and journal are deleted unless
    /// `keepingFiles`. A complete file is never deleted.
    public func remove(_ id: DownloadID, keepingFiles: Bool = false) throws(QueueError) {
        try applyRefusable { state throws(QueueError) in
            let actions = try state.book.remove(id, keepingFiles: keepingFiles)
            if state.book.status(id) == nil { send(.removed(id), in: state) }
            return actions
        }
        letGoIfForgotten(id)
    }

    /// Moves `id` to `position` in the queue (0 is first).
    public func move(_ id: DownloadID, to position: Int) throws(QueueError) {
        try applyRefusable { state throws(QueueError) in try state.book.move(id, to: position) }
    }

    /// Downloads running at once. Raising it starts waiting ones at once; lowering it stops the
    /// last running ones in queue order, which wait again (``QueueEvent/requeued(_:)``).
    public var maximumActive: Int {
        get { state.withLock { $0.book.maximumActive } }
        set { apply { state in state.book.setMaximumActive(newValue) } }
    }

    /// Changes the options `id` runs with from its next start (a running download is not
    /// restarted for it), and its URL when `url` is given (aria2's `changeUri`): a journal
    /// written for another URL is not trusted, so such a download starts over.
    public func setOptions(_ options: DownloadOptions, for id: DownloadID, url: String? = nil) throws(DownloadError) {
        guard let current = state.withLock({ $0.items[id]?.url }) else { return }
        let item = try Self.item(url ?? current, options: options, s3: s3)
        state.withLock { state in
            state.items[id]?.url = item.url
            state.items[id]?.redactedURL = item.redactedURL
            state.items[id]?.source = item.source
            state.items[id]?.options = item.options
        }
    }

    /// Every download in the queue, in queue order. O(n), each URL redacted: for one download
    /// ask ``entry(_:)``, for the ids of some statuses ``ids(_:)``.
    public var entries: [QueueEntry] {
        state.withLock { state in state.book.order.compactMap { id in Self.entry(id, in: state) } }
    }

    /// `id`'s entry; `nil` when it is not in the queue. One lookup, not a copy of the queue: what
    /// a status call for a few hundred downloads can afford per download.
    public func entry(_ id: DownloadID) -> QueueEntry? {
        state.withLock { state in Self.entry(id, in: state) }
    }

    /// The entries of `ids` still in the queue, as they stand, read together.
    public func entries(_ ids: [DownloadID]) -> [DownloadID: QueueEntry] {
        state.withLock { state in
            var found: [DownloadID: QueueEntry] = [:]
            found.reserveCapacity(ids.count)
            for id in ids { found[id] = Self.entry(id, in: state) }
            return found
        }
    }

    /// The downloads whose status is one of `statuses`, in queue order (ids only, no URL redacted).
    public func ids(_ statuses: QueueStatus...) -> [DownloadID] {
        state.withLock { state in state.book.order.filter { id in state.book.status(id).map { statuses.contains($0) } ?? false } }
    }

    private static func entry(_ id: DownloadID, in state: State) -> QueueEntry? {
        guard let item = state.items[id], let status = state.book.status(id) else { return nil }
        return QueueEntry(id: id, url: item.redactedURL, status: status, path: item.path,
                          receivedBytes: item.receivedBytes, totalBytes: item.totalBytes,
                          bytesPerSecond: item.bytesPerSecond, connections: item.connections, error: item.error)
    }

    /// Where `id` stands; `nil` when it is not in the queue (never added, or removed).
    public func status(_ id: DownloadID) -> QueueStatus? {
        state.withLock { $0.book.status(id) }
    }

    /// Stops every running download (each journal written), starts no more, waits until their
    /// threads are done, then ends the event sequences. Stopped downloads are paused.
    public func shutdown() async {
        state.withLock { state in
            state.shuttingDown = true
            for id in state.book.order {
                _ = try? state.book.pause(id)
            }
            for item in state.items.values { item.cancellation?.cancel() }
        }
        await threads.joinAll()
        // Finished outside the lock: a sequence's termination handler takes it.
        let subscribers = state.withLock { state in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }

    // MARK: Carrying out the book's actions

    private func applyRefusable(_ operation: (inout State) throws(QueueError) -> [QueueBook.Action]) throws(QueueError) {
        let result = state.withLock { state in
            Result { () throws(QueueError) in try carryOut(operation(&state), in: &state) }
        }
        try result.get()
    }

    private func apply(_ operation: (inout State) -> [QueueBook.Action]) {
        state.withLock { state in carryOut(operation(&state), in: &state) }
    }

    /// Runs with the lock held: starts are launched, stops tripped, removed files deleted.
    private func carryOut(_ actions: [QueueBook.Action], in state: inout State) {
        for action in actions {
            switch action {
            case .start(let id):
                if state.shuttingDown {
                    // Nothing starts any more: it is paused where it stands.
                    carryOut(state.book.ended(id, .stopped), in: &state)
                    continue
                }
                guard var item = state.items[id] else { continue }
                let cancellation = CancellationFlag()
                item.cancellation = cancellation
                item.error = nil
                item.isRunning = true
                launch(id, item: item, cancellation: cancellation)
                state.items[id] = item
                send(.started(id), in: state)
            case .stop(let id):
                state.items[id]?.cancellation?.cancel()
            case .discard(let id):
                if let path = state.items[id]?.path {
                    let paths = OutputPaths(final: path)
                    FileSystem.remove(paths.journal)
                    FileSystem.remove(paths.partial)
                }
            }
        }
    }

    /// Lets go of `id`'s item once the book has forgotten it and its thread is done (after its
    /// files were discarded, if asked): only the download an operation or an end was about,
    /// never a sweep over every item.
    private func letGoIfForgotten(_ id: DownloadID) {
        state.withLock { state in
            if state.book.status(id) == nil, state.items[id]?.isRunning == false { state.items[id] = nil }
        }
    }

    private func send(_ event: QueueEvent, in state: State) {
        for continuation in state.subscribers.values { continuation.yield(event) }
    }

    /// The download's run, on a thread of its own started now; its end goes back to the book
    /// from that thread, once the download has closed everything it opened.
    private func launch(_ id: DownloadID, item: Item, cancellation: CancellationFlag) {
        let (source, options) = (item.source, item.options)
        threads.start(niceness: transferNiceness) { [self] in
            let outcome = Result { () throws(DownloadError) -> DownloadSummary in
                try run(id, source: source, options: options, cancellation: cancellation)
            }
            ended(id, outcome)
        }
    }

    private func run(_ id: DownloadID, source: ResolvedSource, options: DownloadOptions,
                     cancellation: CancellationFlag) throws(DownloadError) -> DownloadSummary {
        let options = options.within(total: self.options.maximumConnections, perHost: self.options.maximumConnectionsPerHost)
        try OutputPaths.prepareDestination(options.destination,
                                           followsLink: OutputPaths.followsLink(options.destination, options: options))
        let connections = WorkerConnections(budget: budget)
        defer { connections.releaseAll() }
        let sharing = DownloadSession.BatchSharing(connections: connections, priority: Int(clamping: id.rawValue),
                                                   claims: claims, buffers: buffers)
        return try DownloadSession(source: source, options: options, cancellation: cancellation,
                                   loop: CurlLoop(share: share), sharing: sharing) { [self] event in
            state.withLock { state in
                switch event {
                case .started(let start):
                    state.items[id]?.path = start.path
                    state.items[id]?.totalBytes = start.totalBytes
                    state.items[id]?.receivedBytes = start.resumedBytes
                case .progress(let progress):
                    state.items[id]?.receivedBytes = progress.receivedBytes
                    state.items[id]?.bytesPerSecond = progress.bytesPerSecond
                    state.items[id]?.connections = progress.activeConnections
                default: break
                }
                send(.download(id, event), in: state)
            }
        }.run()
    }

    /// A download has ended (said on its own thread, everything it opened closed): the book
    /// decides what it becomes.
    private func ended(_ id: DownloadID, _ outcome: Result<DownloadSummary, DownloadError>) {
        apply { state in
            state.items[id]?.cancellation = nil
            state.items[id]?.isRunning = false
            state.items[id]?.bytesPerSecond = 0
            state.items[id]?.connections = 0
            let requeue = state.book.isStopping(id)
            let end: QueueBook.End
            switch outcome {
            case .success(let summary):
                end = .finished
                state.items[id]?.receivedBytes = summary.bytes
                send(.completed(id, summary), in: state)
            case .failure(let error) where error.category == .interrupted:
                end = .stopped
            case .failure(let error):
                end = .failed
                state.items[id]?.error = error
                send(.failed(id, error), in: state)
            }
            let actions = state.book.ended(id, end)
            if end == .stopped {
                switch state.book.status(id) {
                case .paused: send(.paused(id), in: state)
                case .waiting where requeue: send(.requeued(id), in: state)
                case nil: send(.removed(id), in: state)
                default: break
                }
            }
            return actions
        }
        letGoIfForgotten(id)
    }
}
