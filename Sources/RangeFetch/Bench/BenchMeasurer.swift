#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import CCurl

/// Carries out a `BenchPlan`: probes the URL, then for each connection count runs its own
/// `CurlLoop` with one ranged request per connection (distinct slices of the file,
/// never more than the file per run), and summarises the sweep in a `BenchReport`.
package struct BenchMeasurer: Sendable {
    /// What the measurer reports while it works.
    public enum Event: Sendable {
        /// The file was probed; `oneStreamReason` is set when only a plain stream can be measured.
        case probed(RemoteFile, oneStreamReason: String?)
        /// A run begins (`run` counts from 1).
        case measuring(connections: Int, run: Int, of: Int, sink: BenchPlan.Sink)
        /// A step is done.
        case step(BenchStep, sink: BenchPlan.Sink)
    }

    /// What to measure.
    public var plan: BenchPlan

    /// A measurer of `plan`.
    public init(plan: BenchPlan) { self.plan = plan }

    /// Measures `url`. Throws for bad input (invalid URL or plan, HTTP errors, an empty file),
    /// failures that retries could not fix, file-system errors of `--sink disk`, and cancellation.
    public func run(_ url: String, report: @escaping @Sendable (Event) -> Void = { _ in }) async throws(DownloadError) -> BenchReport {
        _ = try SourceAddress.http(url)
        if let problem = plan.problem() { throw DownloadError(.invalidOption, problem) }
        let cancellation = CancellationFlag()
        var bound = self.plan
        // Secrets go to the measured URL's origin only, never to where it redirects.
        try bound.request.bindSecrets(to: url)
        let plan = bound
        return try await BlockingWork.run(cancellation: cancellation) { () throws(DownloadError) -> BenchReport in
            try Sweep(plan: plan, url: url, cancellation: cancellation, report: report).run()
        }
    }
}

/// One sweep on the measuring thread.
private struct Sweep {
    let plan: BenchPlan
    let url: String
    let cancellation: CancellationFlag
    let report: @Sendable (BenchMeasurer.Event) -> Void

    func run() throws(DownloadError) -> BenchReport {
        let remote = try Prober(request: plan.request, cancellation: cancellation, loop: CurlLoop()).probe(url)
        if remote.size == 0 {
            throw DownloadError(.invalidOption, "\(url): the file is empty (0 bytes); there is nothing to measure", url: url)
        }
        var oneStreamReason: String?
        if !remote.acceptsRanges {
            oneStreamReason = "the server does not accept byte ranges"
        } else if remote.size == nil {
            oneStreamReason = "the server does not say the file's size"
        } else if let coding = remote.contentEncoding {
            oneStreamReason = "the server sends the file with Content-Encoding \(coding)"
        }
        report(.probed(remote, oneStreamReason: oneStreamReason))
        let counts = oneStreamReason == nil ? plan.connectionCounts : [1]
        var steps: [BenchStep] = []
        for count in counts {
            let step = try measureStep(remote: remote, connections: count, ranged: oneStreamReason == nil, sink: plan.sink)
            steps.append(step)
            report(.step(step, sink: plan.sink))
            if !plan.shouldContinue(afterMedians: steps.map(\.medianBytesPerSecond)) { break }
        }
        var nullAtKnee: BenchStep?
        if plan.sink == .disk {
            let knee = BenchVerdict(steps: steps).recommendedConnections
            nullAtKnee = try measureStep(remote: remote, connections: knee, ranged: oneStreamReason == nil, sink: .null)
            if let nullAtKnee { report(.step(nullAtKnee, sink: .null)) }
        }
        return BenchReport(url: url, size: remote.size, sink: plan.sink, oneStreamReason: oneStreamReason,
                           steps: steps, nullSinkAtKnee: nullAtKnee, processors: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    private func measureStep(remote: RemoteFile, connections: Int, ranged: Bool, sink: BenchPlan.Sink) throws(DownloadError) -> BenchStep {
        var samples: [BenchSample] = []
        for run in 1...plan.runs {
            report(.measuring(connections: connections, run: run, of: plan.runs, sink: sink))
            samples.append(try measureRun(remote: remote, connections: connections, ranged: ranged, sink: sink))
        }
        return BenchStep(connections: connections, samples: samples)
    }

    private func measureRun(remote: RemoteFile, connections: Int, ranged: Bool, sink: BenchPlan.Sink) throws(DownloadError) -> BenchSample {
        let budget = plan.budgetBytes(fileSize: remote.size)
        var file: PartialFile?
        if sink == .disk {
            // A file with no name (O_TMPFILE, else a random name created O_EXCL and removed at
            // once): nothing another user of the directory could guess, plant or swap.
            do {
                file = try PartialFile(anonymousIn: plan.diskDirectory)
            } catch {
                throw error.downloadError
            }
        }
        defer { file?.close() }
        let loop = try CurlLoop()
        let cpuBefore = Self.cpuSeconds()
        let start = MonotonicTime.now()
        let slices: [ByteRange?] = ranged ? BenchPlan.slices(budget: budget ?? 0, connections: connections) : [nil]
        var all: [BenchConnection] = []
        for slice in slices {
            all.append(try BenchConnection(url: Source(remote: remote).requestURL, slice: slice, streamLimit: ranged ? nil : budget,
                                           remoteSize: remote.size, file: file, now: start))
        }
        let transfers = BenchRound(connections: all, loop: loop, deadline: start + plan.durationSeconds,
                               request: plan.request, maximumRetries: plan.maximumRetries)
        do {
            try transfers.start()
            try loop.run(transfers, cancellation: cancellation)
        } catch {
            transfers.failure = transfers.failure ?? error
        }
        let failure = transfers.failure
        for connection in all { loop.remove(connection.easy) }
        for connection in all { connection.flush() }
        if let error = all.compactMap(\.failure).first ?? failure { throw error }
        let end = MonotonicTime.now()
        let cpu = Self.cpuSeconds() - cpuBefore
        return BenchSample(
            connections: all.count,
            bytes: all.reduce(0) { $0 + $1.written },
            seconds: end - start,
            connectionBytesPerSecond: all.map { connection in
                let seconds = (connection.finishedAt ?? end) - connection.startedAt
                return seconds > 0 ? Double(connection.written) / seconds : 0
            },
            timeToFirstByteSeconds: median(all.compactMap(\.timeToFirstByteSeconds)),
            connectSeconds: median(all.compactMap(\.connectSeconds)),
            cpuSeconds: cpu,
            retries: all.reduce(0) { $0 + $1.retries },
            requests: all.reduce(0) { $0 + $1.requests },
            pushbacks: all.reduce(0) { $0 + $1.pushbacks },
            pushbackStatus: all.lazy.compactMap(\.pushbackStatus).first,
            admittedConnections: transfers.admittedConnections,
            tcpConnections: transfers.tcpConnections,
            httpVersion: transfers.httpVersion ?? all.lazy.compactMap(\.easy.httpVersion).first)
    }

    /// User plus system CPU seconds of this process so far (`getrusage(RUSAGE_SELF)`).
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// One bench run's requests on a ``CurlLoop``: a request that ends early is retried (up to the
/// plan's limit) for what is left of its slice; the run stops at the deadline, when every request
/// is done, or at the first failure.
private final class BenchRound: CurlLoopClient {
    let connections: [BenchConnection]
    let loop: CurlLoop
    let deadline: Double
    let request: RequestOptions
    let maximumRetries: Int
    /// Indices of the connections whose request is in the loop.
    private var running: Set<Int> = []
    /// Connections the server refused (429, 503), by index, with when to ask again.
    private var waiting: [Int: Double] = [:]
    var failure: DownloadError?
    /// The most TCP connections open at once.
    private(set) var tcpConnections = 0
    /// The most responses streaming the file at once (what a server that refuses connections
    /// beyond a count admits).
    private(set) var admittedConnections = 0
    private(set) var httpVersion: String?

    /// Milliseconds the loop waits at most, so the deadline is noticed.
    private static let pollMilliseconds: Int32 = 50

    init(connections: [BenchConnection], loop: CurlLoop, deadline: Double, request: RequestOptions,
         maximumRetries: Int) {
        self.connections = connections
        self.loop = loop
        self.deadline = deadline
        self.request = request
        self.maximumRetries = maximumRetries
    }

    func start() throws(DownloadError) {
        for index in connections.indices { try send(index) }
    }

    /// Seconds to wait after a 429 or 503 before asking again: the server's `Retry-After`, kept
    /// between 0.05 and 1 s so a run of a few seconds still measures (default 0.25 s).
    static func pushbackDelay(retryAfterSeconds: Double?) -> Double {
        min(1, max(0.05, retryAfterSeconds ?? 0.25))
    }

    private func send(_ index: Int) throws(DownloadError) {
        connections[index].requests += 1
        connections[index].prepareRequest(options: request)
        try loop.add(connections[index].easy, token: index)
        running.insert(index)
    }

    func afterTransfers(finished: [CurlLoop.Finished], now: Double) throws(DownloadError) -> CurlLoop.Next {
        tcpConnections = max(tcpConnections, loop.openConnections)
        admittedConnections = max(admittedConnections, running.count { connections[$0].isStreaming })
        for end in finished where failure == nil {
            let connection = connections[end.token]
            running.remove(end.token)
            httpVersion = httpVersion ?? connection.easy.httpVersion
            if connection.failure == nil, connection.isPushback, !connection.isComplete {
                // Pushback, not a failure: the request is asked again after a pause, and the
                // step reports how often it happened.
                connection.pushbacks += 1
                connection.pushbackStatus = connection.head.status
                waiting[end.token] = now + Self.pushbackDelay(retryAfterSeconds: connection.retryAfterSeconds)
            } else if let error = connection.failure {
                failure = error
            } else if end.result == CURLE_OK || connection.isComplete {
                if !connection.isComplete, connection.slice != nil {
                    failure = DownloadError(.protocolViolation, "\(Redaction.url(connection.url)): response ended before the range was complete",
                                             url: connection.url)
                }
                connection.finishedAt = MonotonicTime.now()
            } else if connection.retries < maximumRetries, TransferFailure.isRetryableDuringTransfer(end.result) {
                connection.retries += 1
                try send(end.token)
            } else {
                failure = TransferFailure.curl(end.result, url: Redaction.url(connection.url), detail: connection.easy.errorDetail)
            }
        }
        if failure == nil, now < deadline {
            for (index, time) in waiting where time <= now {
                waiting[index] = nil
                try send(index)
            }
        }
        if (running.isEmpty && waiting.isEmpty) || failure != nil || now >= deadline { return .done }
        return .wait(milliseconds: min(Self.pollMilliseconds, Int32(max(1, (deadline - now) * 1000))))
    }
}
