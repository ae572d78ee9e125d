#if canImport(Glibc)
import Glibc
#endif
import RangeFetch
import Synchronization

/// Prints a batch: on a terminal one aggregate bar (files done/total, bytes, speed, ETA) over a
/// line per active file, redrawn in place; with `--json` every event as a JSON line carrying the
/// file's index, URL and path; otherwise only warnings and errors. At the end, a table of every
/// file on stdout (none with `-q`; with JSON a `batch_finish` object lists them).
///
/// Called from every worker thread at once: all state sits behind one lock.
final class BatchReporter: Sendable {
    private let style: Reporter.Style

    private struct FileState {
        var name: String
        var progress: DownloadProgress?
    }

    /// What is shown of the batch. Files are held by index only until they end (finished or
    /// failed), so a list of millions costs no memory per file that ended.
    private struct State {
        /// The URL (redacted) of each file not ended yet, by index, as the batch reaches it.
        var urls: [Int: String] = [:]
        var paths: [Int: String] = [:]
        /// Files the batch has reached (indexes are handed out in order from 0).
        var reached = 0
        var active: [Int: FileState] = [:]
        /// Bytes received per file so far (the latest report; final size once done).
        private(set) var received: [Int: Int64] = [:]
        /// Bytes each file already had from an earlier run (not counted in the speed).
        private(set) var resumed: [Int: Int64] = [:]
        /// The sums of ``received`` and ``resumed``, kept as they change: summing them at every
        /// event made a batch quadratic in its files (a rerun settling 50,000 files spent 1.7 s
        /// of 2.7 on it, a million would have taken many minutes).
        private(set) var receivedTotal: Int64 = 0
        private(set) var resumedTotal: Int64 = 0

        mutating func setReceived(_ index: Int, _ bytes: Int64) {
            receivedTotal += bytes - (received.updateValue(bytes, forKey: index) ?? 0)
        }

        mutating func setResumed(_ index: Int, _ bytes: Int64) {
            resumedTotal += bytes - (resumed.updateValue(bytes, forKey: index) ?? 0)
        }

        mutating func reach(_ index: Int, url: String) {
            urls[index] = Redaction.url(url)
            reached = max(reached, index + 1)
        }

        /// Forgets a file that ended; its bytes stay in the totals.
        mutating func forget(_ index: Int) {
            urls[index] = nil
            paths[index] = nil
            received[index] = nil
            resumed[index] = nil
            if let total = totals.removeValue(forKey: index) {
                endedTotal += total
                endedSized += 1
            }
        }
        /// Sizes of the files not ended yet, as far as known.
        var totals: [Int: Int64] = [:]
        /// The sizes of the files that ended, added up, and how many.
        var endedTotal: Int64 = 0
        var endedSized = 0
        var done = 0
        var failed = 0
        var rate = RateEstimator()
        var lastDraw = 0.0
        var drawnLines = 0
    }

    private let state = Mutex(State())
    /// Redraws at most this often, seconds.
    private static let redrawSeconds = 0.25
    /// Active files shown below the aggregate bar at most.
    private static let fileLines = 8

    /// `-q`: no table at the end either.
    private let quiet: Bool
    /// `-v`: a line per finished or failed request, labelled with its file (a `request` object
    /// with `--json`).
    private let verbose: Bool

    init(json: Bool, quiet: Bool, verbose: Bool = false) {
        style = Reporter.Style(json: json, quiet: quiet)
        self.quiet = quiet
        self.verbose = verbose
    }

    /// The final table, cut to the terminal's width when stdout is one.
    private func table(_ summary: BatchSummary) -> String {
        BatchRenderer.table(summary, columns: isatty(STDOUT_FILENO) != 0 ? Terminal.width() : nil) + "\n"
    }

    func begin(urls: [String]) {
        state.withLock { state in // shown and printed: no secrets
            for (index, url) in urls.enumerated() { state.reach(index, url: url) }
        }
    }

    func handle(_ event: BatchEvent) {
        // Per-request lines are `get -v` of a single download; slow-connection takeovers are
        // routine, so only the JSON keeps them.
        if case .file(let index, .requestEnded(let end)) = event {
            guard verbose else { return }
            if style == .json { return handleJSON(event) }
            let line = TerminalText.escaped("\(label(index)): \(ProgressRenderer.requestLine(end))") + "\n"
            let clear = state.withLock { clearBlock(&$0) }
            return writeOut(clear + line, to: STDERR_FILENO)
        }
        if case .queued(let index, let url) = event {
            return state.withLock { $0.reach(index, url: url) }
        }
        if case .file(_, .warning(let warning)) = event, style != .json, warning.isRoutine { return }
        switch style {
        case .json: handleJSON(event)
        case .bar: handleBar(event)
        case .silent:
            switch event {
            case .file(let index, .warning(let warning)):
                writeOut(TerminalText.escaped("\(Reporter.label(warning)): \(Self.naming(label(index), Reporter.words(warning)))") + "\n", to: STDERR_FILENO)
            case .warning(let warning):
                writeOut(TerminalText.escaped("warning: \(Reporter.words(warning))") + "\n", to: STDERR_FILENO)
            case .failed(_, let error): writeOut("rangefetch: error: \(TerminalText.escaped(error.cliMessage))\n", to: STDERR_FILENO)
            default: break
            }
        }
        switch event {
        case .file(let index, .finished), .failed(let index, _): state.withLock { $0.forget(index) }
        default: break
        }
    }

    func finish(_ summary: BatchSummary) {
        switch style {
        case .json: break // batch_finish already carries every file
        case .bar:
            let clear = state.withLock { clearBlock(&$0) }
            writeOut(clear, to: STDERR_FILENO)
            writeOut(table(summary), to: STDOUT_FILENO)
        case .silent:
            if !quiet { writeOut(table(summary), to: STDOUT_FILENO) }
        }
    }

    /// A failure of the batch as a whole (a bad list, bad options): one line.
    func fail(_ error: DownloadError, status: Int32) {
        if style == .json { writeOut(ProgressRenderer.json(error: error, exitCode: status) + "\n", to: STDOUT_FILENO) }
        let clear = state.withLock { clearBlock(&$0) }
        writeOut(clear + "rangefetch: error: \(TerminalText.escaped(error.cliMessage))\n", to: STDERR_FILENO)
    }

    // MARK: JSON

    private func handleJSON(_ event: BatchEvent) {
        let line: String?
        switch event {
        case .file(let index, let fileEvent):
            let (url, path) = state.withLock { state -> (String, String?) in
                if case .started(let start) = fileEvent { state.paths[index] = start.path }
                return (state.urls[index] ?? "", state.paths[index])
            }
            line = ProgressRenderer.json(fileEvent, index: index, url: url, path: path)
        default:
            let urls = state.withLock { $0.urls }
            line = BatchRenderer.json(event, url: { urls[$0] ?? "" }, exitCode: ExitStatus.code(for:))
        }
        if let line { writeOut(line + "\n", to: STDOUT_FILENO) }
    }

    // MARK: Terminal

    /// A file's warning after its name, once: a warning about the file's URL already starts
    /// with it (the name until the file has a path).
    static func naming(_ label: String, _ words: String) -> String {
        words.hasPrefix(label + ":") ? words : "\(label): \(words)"
    }

    private func label(_ index: Int) -> String {
        state.withLock { $0.paths[index] ?? $0.urls[index] ?? "#\(index + 1)" }
    }

    private func handleBar(_ event: BatchEvent) {
        var output = ""
        state.withLock { state in
            var note: String?
            var redraw = false
            switch event {
            case .started:
                redraw = true
            case .file(let index, .started(let start)):
                state.paths[index] = start.path
                state.totals[index] = start.totalBytes
                state.setReceived(index, start.resumedBytes)
                state.setResumed(index, start.resumedBytes)
                state.active[index] = FileState(name: TerminalText.escaped(Self.baseName(start.path)))
                redraw = true
            case .file(let index, .progress(let progress)):
                state.active[index]?.progress = progress
                state.setReceived(index, progress.receivedBytes)
            case .file(let index, .finished(let summary)):
                state.active[index] = nil
                state.setReceived(index, summary.bytes)
                state.setResumed(index, summary.bytes - summary.transferredBytes)
                state.totals[index] = summary.bytes
                state.done += 1
                // A file found complete was never drawn: the next timed redraw counts it (a rerun
                // the batch journal settles finishes thousands a second).
                redraw = !summary.alreadyComplete
            case .file(let index, .warning(let warning)):
                note = "\(Reporter.label(warning)): \(Self.naming(state.paths[index] ?? state.urls[index] ?? "#\(index + 1)", Reporter.words(warning)))"
            case .warning(let warning):
                note = "warning: \(Reporter.words(warning))"
            case .failed(let index, let error):
                state.active[index] = nil
                state.failed += 1
                note = "rangefetch: error: \(error.cliMessage)"
            default:
                break
            }
            let now = MonotonicTime.now()
            state.rate.record(bytes: state.receivedTotal - state.resumedTotal, at: now)
            if let note { output += clearBlock(&state) + TerminalText.escaped(note) + "\n" }
            if note != nil || redraw || now - state.lastDraw >= Self.redrawSeconds {
                output += draw(&state, now: now)
            }
        }
        if !output.isEmpty { writeOut(output, to: STDERR_FILENO) }
    }

    /// Erases the drawn block and leaves the cursor at its start.
    private func clearBlock(_ state: inout State) -> String {
        guard state.drawnLines > 0 else { return "" }
        defer { state.drawnLines = 0 }
        return "\r" + (state.drawnLines > 1 ? "\u{1B}[\(state.drawnLines - 1)A" : "") + "\u{1B}[J"
    }

    private func draw(_ state: inout State, now: Double) -> String {
        state.lastDraw = now
        // One column short of the edge, so no line ever wraps (a wrapped line would scroll).
        let width = max(20, Terminal.width() - 1)
        var lines = [aggregateLine(state, columns: width)]
        let shown = state.active.keys.sorted()
        let nameWidth = min(28, max(10, width / 4))
        for index in shown.prefix(Self.fileLines) {
            guard let file = state.active[index] else { continue }
            let progress = file.progress.map { ProgressRenderer.bar($0, columns: width - nameWidth - 4) } ?? "starting"
            lines.append("  \(Self.fit(file.name, nameWidth))  \(progress)")
        }
        if shown.count > Self.fileLines { lines.append("  … and \(shown.count - Self.fileLines) more") }
        var output = clearBlock(&state)
        output += lines.map { String($0.prefix(width)) }.joined(separator: "\n")
        state.drawnLines = lines.count
        return output
    }

    private func aggregateLine(_ state: State, columns: Int) -> String {
        let files = state.reached
        let finished = state.done + state.failed
        let received = state.receivedTotal
        var parts = ["\(finished)/\(files) files" + (state.failed > 0 ? " (\(state.failed) failed)" : "")]
        parts.append(ByteCount.format(received))
        parts.append("\(ByteCount.format(Int64(state.rate.bytesPerSecond)))/s")
        // Files not yet probed are guessed at the average size of those that were.
        let knownCount = state.totals.count + state.endedSized
        if knownCount > 0 {
            let knownBytes = state.totals.values.reduce(state.endedTotal, +)
            let average = Double(knownBytes) / Double(knownCount)
            let unknown = Double(max(0, files - knownCount - state.failed))
            let remaining = Double(knownBytes - received) + unknown * average
            if let eta = state.rate.eta(remaining: Int64(max(0, remaining))) { parts.append("ETA \(ProgressRenderer.duration(eta))") }
        }
        // Open TCP connections (each file's worker reports its handle's, idle ones included):
        // what the --max-connections limits count.
        let connections = state.active.values.reduce(0) { $0 + ($1.progress?.tcpConnections ?? 0) }
        parts.append("\(state.active.count) active  \(connections) conns")
        let fraction = files == 0 ? 1 : Double(finished) / Double(files)
        let graphic = columns >= 100 ? 20 : 10
        let filled = min(graphic, Int(fraction * Double(graphic)))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: graphic - filled) + "] " + parts.joined(separator: "  ")
    }

    private static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    private static func fit(_ text: String, _ width: Int) -> String {
        if text.count > width { return "…" + text.suffix(width - 1) }
        return text + String(repeating: " ", count: width - text.count)
    }
}
