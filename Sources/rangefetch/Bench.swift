import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import RangeFetch
import Synchronization

/// `rangefetch bench URL`: how fast this machine pulls from that server, and with how many
/// connections.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure throughput from a URL across connection counts, without keeping a file.",
        discussion: """
        For each connection count, rangefetch fetches distinct byte ranges of the file in parallel (never more than the file's size per run) for --duration seconds or --bytes, whichever comes first, repeated --runs times. Bytes are discarded (--sink null) or written to a temporary sparse file that is removed afterwards (--sink disk). The sweep stops early once throughput stops growing.

        It reports per step the median throughput and its spread, the slowest and fastest connection, time to first byte, connection setup time, rangefetch's CPU seconds per GiB and retries; then the knee (the fewest connections within 5% of the best) as a recommended -n, and the likely limit: a per-connection cap, the link or server, the CPU, or the disk (--sink disk also measures --sink null at the knee to compare).

        A server without byte ranges, or one that does not say the file's size, gets a one-stream measurement labelled as such; an empty file is an error.

        Examples:
          rangefetch bench https://example.com/big.iso
          rangefetch bench -n 1,4,16,64 --duration 10 --runs 5 https://host/f
          rangefetch bench --sink disk -d /data https://host/f   # disk the limit?
          rangefetch bench --json https://host/f | jq -r 'select(.verdict).verdict'
        """
    )

    @Argument(help: "The http:// or https:// URL of a large file to fetch ranges of.")
    var url: String

    @Option(name: [.customShort("n"), .customLong("connections")], help: ArgumentHelp("Connection counts to measure, ascending, comma-separated, each 1 to 64. Example: -n 1,2,4,8", valueName: "list"), transform: ConnectionCountsArgument.parse)
    var connections = ConnectionCountsArgument(counts: BenchPlan().connectionCounts)

    @Option(name: .customLong("duration"), help: ArgumentHelp("Seconds per run at most. Example: --duration 10", valueName: "seconds"))
    var duration: Double = 5

    @Option(name: .customLong("bytes"), help: ArgumentHelp("Bytes per run at most (K/M/G suffixes; default: the whole file). Example: --bytes 1G", valueName: "size"), transform: ByteCountArgument.benchBytes)
    var bytes: ByteCountArgument?

    @Option(name: .customLong("runs"), help: ArgumentHelp("Runs per connection count; the median and spread are reported. Example: --runs 5", valueName: "n"))
    var runs: Int = 3

    @Option(name: .customLong("sink"), help: ArgumentHelp("Where bytes go: null (discard) or disk (a temporary sparse file, removed afterwards). Example: --sink disk", valueName: "null|disk"), transform: BenchSinkArgument.parse)
    var sink = BenchSinkArgument(sink: .null)

    @Option(name: [.short, .customLong("dir")], help: ArgumentHelp("Directory for --sink disk's temporary file. Example: -d /data", valueName: "dir"))
    var directory: String = "."

    @Flag(name: .customLong("full-sweep"), help: "Measure every connection count, even after throughput stops growing.")
    var fullSweep = false

    @Flag(name: .customLong("json"), help: "Print one JSON object per step (bench_step) and one bench_summary on stdout instead of the table.")
    var json = false

    @Option(name: .customLong("csv"), help: ArgumentHelp("Also write the table as CSV to this file. Example: --csv bench.csv", valueName: "file"))
    var csv: String?

    @Flag(name: [.short, .customLong("quiet")], help: "No live status line; only the results (and errors).")
    var quiet = false

    @OptionGroup var network: NetworkOptions

    func validate() throws {
        try network.check()
        if network.maxSpeed != nil { throw ValidationError("bench measures the link; it does not take --max-speed") }
        if let problem = makePlan().problem() { throw ValidationError(problem) }
    }

    func run() async throws {
        let reporter = Reporter(json: json, quiet: quiet)
        let status = StatusLine(enabled: !quiet && !json && isatty(STDERR_FILENO) != 0)
        let measurer = BenchMeasurer(plan: makePlan())
        let json = self.json
        let report: BenchReport
        do {
            let task = Task { () async throws(DownloadError) -> BenchReport in
                try await measurer.run(url) { event in
                    switch event {
                    case .probed(_, let reason?):
                        status.note("note: one-stream measurement: \(reason)")
                    case .probed: break
                    case .measuring(let count, let run, let runs, let sink):
                        status.show("measuring \(count) connection\(count == 1 ? "" : "s")\(sink == .null ? "" : " (sink \(sink.rawValue))"), run \(run) of \(runs)…")
                    case .step(let step, let sink):
                        if json { writeOut(BenchRenderer.json(step: step, sink: sink) + "\n", to: STDOUT_FILENO) }
                    }
                }
            }
            let interrupts = Interrupts { task.cancel() }
            defer { interrupts.cancel() }
            report = try await task.value
        } catch {
            status.clear()
            let error = (error as? DownloadError) ?? DownloadError(usageMessage: "\(error)")
            let code = ExitStatus.code(for: error)
            reporter.fail(error, status: code)
            throw CommandFailure(status: code)
        }
        status.clear()
        if let csv {
            let descriptor = open(csv, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                writeOut("rangefetch: error: cannot write \(csv): \(String(cString: strerror(errno)))\n", to: STDERR_FILENO)
                throw CommandFailure(status: ExitStatus.fileSystem)
            }
            writeOut(BenchRenderer.csv(report), to: descriptor)
            close(descriptor)
        }
        if json {
            writeOut(BenchRenderer.json(summary: report) + "\n", to: STDOUT_FILENO)
        } else {
            let bold = Terminal.allowsEmphasis(on: STDOUT_FILENO)
            var table = BenchRenderer.table(report).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            table[1] = Terminal.bold(table[1], enabled: bold)
            writeOut(table.joined(separator: "\n") + "\n" + BenchRenderer.chart(report, width: min(Terminal.width(), 100)) + "\n"
                     + BenchRenderer.conclusion(report, width: Terminal.width()), to: STDOUT_FILENO)
        }
    }

    private func makePlan() -> BenchPlan {
        var plan = BenchPlan()
        plan.connectionCounts = connections.counts
        plan.durationSeconds = duration
        plan.maximumBytes = bytes?.bytes
        plan.runs = runs
        plan.sink = sink.sink
        plan.diskDirectory = directory
        plan.stopWhenFlat = !fullSweep
        plan.maximumRetries = max(0, network.maxTries - 1)
        plan.request = network.requestOptions()
        return plan
    }
}

extension NetworkOptions {
    /// The request options these flags describe (the same ones `get` applies).
    func requestOptions() -> RequestOptions {
        var options = DownloadOptions()
        try? apply(to: &options)
        return options.request
    }
}

/// A one-line status on stderr, redrawn in place; only on a terminal.
final class StatusLine: Sendable {
    private let enabled: Bool
    private let length = Mutex(0)

    init(enabled: Bool) { self.enabled = enabled }

    func show(_ text: String) {
        guard enabled else { return }
        let width = Terminal.width() - 1
        let line = String(text.prefix(max(0, width)))
        let padding = length.withLock { previous -> Int in
            defer { previous = line.count }
            return max(0, previous - line.count)
        }
        writeOut("\r" + line + String(repeating: " ", count: padding), to: STDERR_FILENO)
    }

    func note(_ text: String) {
        clear()
        writeOut(text + "\n", to: STDERR_FILENO)
    }

    func clear() {
        let previous = length.withLock { value -> Int in
            defer { value = 0 }
            return value
        }
        if previous > 0 { writeOut("\r" + String(repeating: " ", count: previous) + "\r", to: STDERR_FILENO) }
    }
}
