#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import CCurl
import Synchronization

/// A batch's first pass over its entries, on one thread and one libcurl loop: each file is probed
/// by a `GET` of its first 256 KiB that keeps them (``Prober/probe(_:keepingUpTo:)``), up to
/// `jobs` at once; a file that came whole with its probe is written from memory, made durable with
/// the others written meanwhile (``CommitLine``) and reported, without a thread, a loop or a
/// session of its own. Every other entry goes on to the workers (``BatchHandoff``), with the
/// probe's answer when there is one, and downloads as it did without the lane
/// (``DownloadSession``): larger files, answers to ask again (a refusal worth a retry, a probe
/// that cannot be read this way), `s3://` objects, mirrors, pieces, speed limits, standard output,
/// and a file or `NAME.part` already at the name.
///
/// What a file that came whole gets is what ``DownloadSession`` gives it (``LaneLanding``).
///
/// 20,000 files of 4 KiB from a local nginx to tmpfs at `-j 16`: see docs/CHANGES.md.
final class SmallFileLane: CurlLoopClient {
    private let run: BatchRun
    private let loop: CurlLoop
    private let connections: WorkerConnections
    private let commits: CommitLine
    /// Requests on the loop, by token (the entry's index).
    private var flights: [Int: Flight] = [:]
    /// A request waiting for a connection of the batch's budget (earlier files first).
    private var waiting: Flight?
    /// Entries taken from the feed, ahead of the lane.
    private let feed: LaneFeed
    /// Entries the feed made ready and the lane has not started, last first.
    private var ready: [Ready] = []
    /// Entries asked of the feed and not yet answered.
    private var asked = 0
    /// Every entry was taken from the feed.
    private var exhausted = false
    /// The host whose connections the lane holds (``WorkerConnections/settle(open:host:)``).
    private var host = ""

    /// Entries made ready ahead of the lane's room, at most, as a share of its capacity: the feed's
    /// thread may wait for a processor while the lane's requests end, and the lane must not then
    /// wait for it (with none ahead the lane ran 11 of 16 requests on average, 20,000 files of
    /// 4 KiB to tmpfs on 2 processors). Taken ahead, not started: `-j` counts files started.
    static let lookahead = 1

    /// Files fetched and not yet durable, at most: each holds a descriptor open, or its bytes.
    static let maximumBacklog = 512
    /// Bytes fetched and not yet written, at most: memory stays flat however slow the disk.
    static let maximumBacklogBytes = 16 << 20

    /// An entry the feed made ready, in the list's order: the lane starts it once the batch has
    /// room for one more file (``BatchRun/reserveFile()``).
    enum Ready: @unchecked Sendable {
        /// A probe for the lane to run.
        case probe(Flight)
        /// An entry for the workers (see the type's description).
        case workers(BatchRun.Taken)
    }

    /// One entry's probe, made ready by the feed's thread and run on the lane's (its request is
    /// used by one thread at a time: handed over, not shared).
    /// A class: it travels from the feed to the lane, a dictionary and the commit line, and its
    /// options are large to copy.
    final class Flight: @unchecked Sendable {
        /// Set again when it starts (``BatchRun/starting(_:)``), on the lane's thread.
        var taken: BatchRun.Taken
        let options: DownloadOptions
        let source: ResolvedSource
        let exchange: PrefixExchange
        let host: String
        /// The directory the file goes into, held open.
        let directory: DirectoryHandle?
        /// Its final path, as its URL names it.
        let final: String

        init(taken: BatchRun.Taken, options: DownloadOptions, source: ResolvedSource, exchange: PrefixExchange,
             host: String, directory: DirectoryHandle?, final: String) {
            self.taken = taken
            self.options = options
            self.source = source
            self.exchange = exchange
            self.host = host
            self.directory = directory
            self.final = final
        }
    }

    /// Requests this lane runs at once, at most: its share of the batch's jobs.
    private let capacity: Int

    private init(run: BatchRun, loop: CurlLoop, connections: WorkerConnections, commits: CommitLine, capacity: Int,
                 feed: LaneFeed) {
        self.run = run
        self.feed = feed
        self.capacity = capacity
        self.loop = loop
        self.commits = commits
        self.connections = connections
    }

    /// The lanes of one batch: what they share, and which of them ends last.
    final class Group: Sendable {
        let run: BatchRun
        /// How many lanes run (each on a thread of its own).
        let count: Int
        /// Where every lane's files are made durable; `nil` when no thread could be made for it.
        fileprivate let commits: CommitLine?
        private let running: Atomic<Int>

        /// One lane per two processors (its requests' libcurl and kernel work, and the commit
        /// line's syncs, take about one each), never more than one per 8 jobs. On 2 processors
        /// two lanes cost more than one (20,000 files of 4 KiB to tmpfs at `-j 16`: 6.2 s of CPU
        /// against 5.4 s, and no sooner done).
        init(run: BatchRun, processors: Int = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) {
            self.run = run
            count = max(1, min(processors / 2, run.options.jobs / 8))
            commits = try? CommitLine()
            running = Atomic(count)
        }

        /// A lane ended; the last one waits for every file's sync and tells the workers no more
        /// entries come.
        fileprivate func laneEnded() {
            guard running.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
            commits?.finish()
            run.handoff.close(workers: run.workerCount)
        }
    }

    /// Runs one of `group`'s lanes on the calling thread until every entry is taken and every
    /// file it downloaded itself is reported. Without a loop or a thread to sync with (resource
    /// limits), every entry it takes goes to the workers.
    static func run(in group: Group) {
        let run = group.run
        defer { group.laneEnded() }
        let connections = WorkerConnections(budget: run.budget)
        let share = (run.options.jobs + group.count - 1) / group.count
        let driven = group.commits.map { drive(run, connections: connections, commits: $0, capacity: share) } ?? false
        // Given back only now that the lane's loop is gone, and with it the connections it kept open.
        connections.releaseAll()
        if !driven {
            var settled: [BatchFileResult] = []
            while let taken = run.take(settling: &settled) {
                run.filesActive.add(1, ordering: .relaxed)
                run.handoff.add(run.starting(taken))
            }
            run.add(settled: &settled)
        }
    }

    /// Runs a lane until every entry is taken; `false` when it could not start (no loop or thread).
    private static func drive(_ run: BatchRun, connections: WorkerConnections, commits: CommitLine, capacity: Int) -> Bool {
        // Small requests: over HTTP/2 they share a connection as streams, as curl -Z's do.
        guard let loop = try? CurlLoop(share: run.share, policy: .multiplexed), let feed = try? LaneFeed(run: run, loop: loop) else { return false }
        loop.readsConnectionLoss = false
        let lane = SmallFileLane(run: run, loop: loop, connections: connections, commits: commits, capacity: capacity, feed: feed)
        run.handoff.wakes(loop)
        defer { run.handoff.stopsWaking(loop) }
        do {
            try loop.run(lane, cancellation: run.cancellation)
        } catch {
            lane.stopAll(error)
        }
        feed.join()
        // Taken ahead and never started: left out, as the entries not read (``BatchRun/take(settling:)``).
        _ = feed.takeAll()
        return true
    }

    func beforeTransfers(now: Double) {
        if let flight = waiting {
            waiting = nil
            start(flight)
        }
        while waiting == nil, !exhausted {
            if ready.isEmpty {
                let (entries, answered, ended) = feed.takeAll()
                asked -= answered
                ready = entries.reversed()
                if ready.isEmpty {
                    exhausted = ended
                    break
                }
            }
            guard hasRoom, run.reserveFile() else { break }
            switch ready.removeLast() {
            case .probe(let flight):
                flight.taken = run.starting(flight.taken)
                start(flight)
            case .workers(let taken):
                run.handoff.add(run.starting(taken))
            }
        }
        askFeed()
    }

    func afterTransfers(finished: [CurlLoop.Finished], now: Double) -> CurlLoop.Next {
        for request in finished {
            guard let flight = flights.removeValue(forKey: request.token) else { continue }
            connections.release(host: flight.host)
            land(flight, result: request.result, now: now)
        }
        if !finished.isEmpty { connections.settle(open: loop.openConnections, host: host) }
        givesBackIdleConnections()
        // Entries for the room the ended requests left, asked now: the feed wakes the loop.
        askFeed()
        let next = next()
        // Files handed to the commit line wake it in groups; the loop comes back when they are due.
        guard let due = commits.wakeIfDue(now: now, laneIdle: flights.isEmpty || next == .done),
              case .wait(let milliseconds) = next else { return next }
        return .wait(milliseconds: min(milliseconds, Int32(max(0, (due - now) * 1000).rounded(.up))))
    }

    private func next() -> CurlLoop.Next {
        if exhausted && flights.isEmpty && waiting == nil { return .done }
        let room = hasRoom && run.filesActive.load(ordering: .relaxed) < run.options.jobs
        if waiting == nil, room, !ready.isEmpty { return .wait(milliseconds: 0) }
        // Few requests under way: the next entry the feed makes ready wakes the loop. With more,
        // their ends wake it soon enough, and it takes the entries then.
        if waiting == nil, room, !exhausted, flights.count <= capacity / 2, feed.wantsWake() { return .wait(milliseconds: 0) }
        // Waiting for a connection or the syncs: asked again soon (the feed wakes the loop when an
        // entry comes, a worker when it ends a file).
        let blocked = waiting != nil || (flights.isEmpty && !ready.isEmpty)
        return .wait(milliseconds: blocked ? 5 : 100)
    }

    /// With no request in flight, the lane's idle connections may hold places of the budget that
    /// another file waits for, and wait for them forever:
    /// - a worker's probe (`-j 2 --max-connections 2`, a larger file, then one whose probe was
    ///   refused once: every file of the jobs is a worker's, and the lane has nothing to run);
    /// - the lane's own next file, on another host (two hosts in one list at
    ///   `--max-connections 2`: the first host's idle connections fill the budget).
    /// They are closed and their places given back; the lane opens new ones for its next files.
    private func givesBackIdleConnections() {
        guard flights.isEmpty, loop.openConnections > 0, run.budget.isWanted, loop.closeIdleConnections() else { return }
        connections.settle(open: loop.openConnections, host: host)
    }

    /// Whether the lane may start one more request: within its capacity, and the commit line may
    /// take more files (``maximumBacklog``, ``maximumBacklogBytes``).
    private var hasRoom: Bool {
        flights.count < capacity && commits.backlog < Self.maximumBacklog && commits.backlogBytes < Self.maximumBacklogBytes
    }

    /// Asks the feed for as many entries as the lane's share of the jobs holds (its requests,
    /// entries ready and entries asked), and ``lookahead`` times as many more: in batches of half
    /// its share, so that the feed's thread wakes once for several (a wake an entry cost a context
    /// switch each), unless the lane has none ready or coming.
    private func askFeed() {
        guard !exhausted else { return }
        let count = Self.entriesToAsk(capacity: capacity, flights: flights.count, ready: ready.count, asked: asked)
        if count > 0 {
            feed.ask(count)
            asked += count
        }
    }

    /// How many entries to ask the feed for now (``askFeed()``): 0 until the lane lacks half its
    /// share, unless it has none ready or coming.
    static func entriesToAsk(capacity: Int, flights: Int, ready: Int, asked: Int) -> Int {
        let count = capacity * (1 + lookahead) - flights - ready - asked
        return count > 0 && (count >= max(1, capacity / 2) || ready + asked == 0) ? count : 0
    }

    /// `taken` made ready to start (on the feed's thread): its probe, or the workers' when the lane
    /// does not take it; `nil` when it ended here (its options or source refused).
    /// - Parameter prepared: the directory the last entry went into (``BatchRun/resolve(_:prepared:)``).
    static func prepare(_ taken: BatchRun.Taken, run: BatchRun, prepared: inout DirectoryHandle?) -> Ready? {
        let resolved: (options: DownloadOptions, source: ResolvedSource)
        do {
            resolved = try run.resolve(taken.entry, prepared: &prepared)
        } catch {
            run.finish(run.starting(taken), outcome: .failure(error))
            return nil
        }
        let (options, source) = resolved
        guard let final = candidate(options: options, source: source, directory: prepared),
              let exchange = try? PrefixExchange(url: source.requestURL, limit: DownloadSession.probeKeepsBytes,
                                                 request: options.request, cancellation: run.cancellation) else {
            return .workers(taken)
        }
        return .probe(Flight(taken: taken, options: options, source: source, exchange: exchange,
                             host: URLParts(source.requestURL)?.origin ?? "", directory: prepared, final: final))
    }

    /// The final path of a file the lane may download, as its URL names it; `nil` for the others
    /// (see the type's description), which go to the workers without a probe. Nothing may be at
    /// that name yet (looked at in `directory`, its directory held open, when it is that one); a
    /// `NAME.part` there is found when the lane creates its own, and the entry handed on.
    static func candidate(options: DownloadOptions, source: ResolvedSource, directory: DirectoryHandle?) -> String? {
        guard source.s3 == nil, DownloadSession.probeMayKeepBytes(options),
              !OutputPaths.followsLink(options.destination, options: options) else { return nil }
        let name = options.nameSource.name(url: source.requestURL, redirectedTo: nil, contentDisposition: nil)
        let final = OutputPaths.path(options.destination, suggestedName: name)
        guard !final.hasSuffix("/") else { return nil }
        let missing = if let directory, directory.path == FileSystem.directoryName(of: final) {
            directory.entryTrust(FileSystem.baseName(of: final)) == nil
        } else {
            FileSystem.kind(of: final, followingLinks: false) == .missing
        }
        return missing ? final : nil
    }

    /// Puts `flight`'s request on the loop once the batch's budget has a connection for it.
    private func start(_ flight: Flight) {
        let priority = flight.taken.index
        guard connections.acquire(host: flight.host, priority: priority) else {
            run.budget.setWaiting(priority: priority, host: flight.host, count: 1)
            waiting = flight
            return
        }
        run.budget.setWaiting(priority: priority, host: flight.host, count: 0)
        host = flight.host
        do {
            try loop.add(flight.exchange.easy, token: priority)
            flights[priority] = flight
        } catch {
            connections.release(host: flight.host)
            run.handoff.add(flight.taken)
        }
    }

    /// What to do with a probe that ended (``LaneLanding``): the file written when it came whole,
    /// else the entry handed on (with the answer) or its failure reported.
    private func land(_ flight: Flight, result: CURLcode, now: Double) {
        LaneLanding(flight: flight, result: result, run: run, loop: loop).land(on: commits, now: now)
    }

    /// Reports `taken`'s end here (a failure the workers would only repeat).
    private func end(_ taken: BatchRun.Taken, _ outcome: Result<DownloadSummary, DownloadError>) {
        run.finish(taken, outcome: outcome)
        run.filesActive.subtract(1, ordering: .relaxed)
    }

    /// The batch was stopped: the requests under way end with `error`, keeping nothing.
    private func stopAll(_ error: DownloadError) {
        for flight in flights.values {
            loop.remove(flight.exchange.easy)
            connections.release(host: flight.host)
            end(flight.taken, .failure(error))
        }
        flights = [:]
        if let flight = waiting {
            run.budget.setWaiting(priority: flight.taken.index, host: flight.host, count: 0)
            end(flight.taken, .failure(error))
            waiting = nil
        }
    }
}
