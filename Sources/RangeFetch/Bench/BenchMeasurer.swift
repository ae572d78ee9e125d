#if canImport(Glibc)
import Glibc
#endif
import CCurl

/// Carries out a ``BenchPlan``: probes the URL, then for each connection count runs its own
/// libcurl multi handle with one ranged request per connection (distinct slices of the file,
/// never more than the file per run), and summarises the sweep in a ``BenchReport``.
public struct BenchMeasurer: Sendable {
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
        let remote = try Prober(request: plan.request, cancellation: cancellation, multi: CurlMulti()).probe(url)
        if remote.size == 0 {
            throw DownloadError(.invalidOption, "\(url): the file is empty (0 bytes); there is nothing to measure")
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

    /// Milliseconds `curl_multi_poll` waits at most, so the deadline and cancellation are noticed.
    static let pollMilliseconds: Int32 = 50

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
        let multi = CurlMulti()
        cancellation.attach(multi)
        defer { cancellation.detach(multi) }
        let cpuBefore = Self.cpuSeconds()
        let start = MonotonicTime.now()
        let deadline = start + plan.durationSeconds
        let slices: [ByteRange?] = ranged ? BenchPlan.slices(budget: budget ?? 0, connections: connections) : [nil]
        var active: [BenchConnection] = slices.map {
            BenchConnection(url: Source(remote: remote).requestURL, slice: $0, streamLimit: ranged ? nil : budget,
                            remoteSize: remote.size, file: file, now: start)
        }
        let all = active
        for connection in active {
            connection.prepareRequest(options: plan.request)
            multi.add(connection.easy)
        }
        var failure: DownloadError?
        var tcpConnections = 0
        var httpVersion: String?
        while !active.isEmpty && failure == nil {
            if cancellation.isCancelled { failure = .cancelled(); break }
            let now = MonotonicTime.now()
            if now >= deadline { break }
            multi.perform()
            tcpConnections = max(tcpConnections, multi.openConnections)
            for (handle, result) in multi.completedTransfers() {
                guard let index = active.firstIndex(where: { $0.easy.handle == handle }) else { continue }
                let connection = active[index]
                httpVersion = httpVersion ?? connection.easy.httpVersion
                multi.remove(connection.easy)
                if let error = connection.failure {
                    failure = error
                } else if result == CURLE_OK || connection.isComplete {
                    if !connection.isComplete, connection.slice != nil {
                        failure = DownloadError(.protocolViolation, "\(Redaction.url(connection.url)): response ended before the range was complete")
                    }
                    connection.finishedAt = MonotonicTime.now()
                    active.remove(at: index)
                } else if connection.retries < plan.maximumRetries, TransferFailure.isRetryableDuringTransfer(result) {
                    connection.retries += 1
                    connection.prepareRequest(options: plan.request)
                    multi.add(connection.easy)
                } else {
                    failure = TransferFailure.curl(result, url: Redaction.url(connection.url), detail: connection.easy.errorDetail)
                }
            }
            if !active.isEmpty && failure == nil {
                multi.poll(timeoutMilliseconds: min(Self.pollMilliseconds, Int32(max(1, (deadline - MonotonicTime.now()) * 1000))))
            }
        }
        for connection in active { multi.remove(connection.easy) }
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
            tcpConnections: tcpConnections,
            httpVersion: httpVersion ?? active.lazy.compactMap(\.easy.httpVersion).first)
    }

    /// User plus system CPU seconds of this process so far (`getrusage(RUSAGE_SELF)`).
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
