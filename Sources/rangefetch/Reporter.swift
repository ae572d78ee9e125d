#if canImport(Glibc)
import Glibc
#endif
import RangeFetch
import Synchronization

/// Prints download events: a live bar on a terminal, JSON lines with `--json`, nothing else
/// when quiet or not on a terminal. Errors always reach standard error as one line.
/// With `verbose`, every request that ends gets a line on stderr (a `request` object with
/// `--json`), and slow-connection takeovers are shown (they are always in the JSON).
final class Reporter: Sendable {
    enum Style: Sendable {
        case bar, json, silent

        /// JSON when asked; else a bar on a terminal unless quiet; else silent.
        init(json: Bool, quiet: Bool) {
            if json {
                self = .json
            } else if quiet || isatty(STDERR_FILENO) == 0 {
                self = .silent
            } else {
                self = .bar
            }
        }
    }

    let style: Style
    let verbose: Bool
    /// Where JSON lines and `--print-digest` go: stdout, or stderr when the download itself is
    /// written to stdout (`-o -`).
    private let reports: Int32
    private let lastBarLength = Mutex(0)

    init(json: Bool, quiet: Bool, verbose: Bool = false, dataOnStandardOutput: Bool = false) {
        self.verbose = verbose
        style = Style(json: json, quiet: quiet)
        reports = dataOnStandardOutput ? STDERR_FILENO : STDOUT_FILENO
    }

    func handle(_ event: DownloadEvent) {
        if case .requestEnded(let end) = event {
            guard verbose else { return }
            if style == .json { printLine(ProgressRenderer.json(event)) } else { note(ProgressRenderer.requestLine(end)) }
            return
        }
        if case .warning(let warning) = event, style != .json, !verbose, warning.isRoutine { return }
        switch style {
        case .json:
            printLine(ProgressRenderer.json(event))
        case .bar:
            switch event {
            case .progress(let progress): drawBar(ProgressRenderer.bar(progress, columns: Terminal.width()))
            case .warning(let warning): note("\(Self.label(warning)): \(Self.words(warning))")
            case .retrying(let notice):
                let what = notice.remaining.map { "bytes \($0.lower)-\($0.upper - 1)" } ?? "the probe"
                note("retrying \(what) in \(formatDecimal(notice.delaySeconds, places: 1)) s (try \(notice.retry + 1)): \(notice.reason)")
            case .verified(let digest, let source): note("verified \(digest.algorithm.rawValue) (\(source))")
            case .started(let start) where start.resumedBytes > 0:
                note("resuming: \(ByteCount.format(start.resumedBytes)) already on disk")
            case .finished(let summary): finish(summary)
            default: break
            }
        case .silent:
            if case .warning(let warning) = event { note("\(Self.label(warning)): \(Self.words(warning))") }
        }
    }

    /// Before the server's first answer: on a terminal, "waiting for HOST:PORT…" at once (the
    /// bar replaces it), so a server that never answers is not a blank screen; with `-v`, a line
    /// saying how long such a server can hold the download up.
    func waiting(for url: String, options: DownloadOptions) {
        guard style != .json, let parts = URLParts(url) else { return }
        let place = parts.host.contains(":") ? "[\(parts.host)]:\(parts.port)" : "\(parts.host):\(parts.port)"
        if verbose {
            let longest = options.retry.longestSilentServerSeconds(stallSeconds: options.request.stallTimeoutSeconds)
            note("connecting to \(place); a server that never answers is given up after about \(Int(longest.rounded())) s (\(options.retry.maximumTries) tries of \(options.request.stallTimeoutSeconds) s without a byte; --max-tries sets the tries)")
        }
        if style == .bar { drawBar("waiting for \(place)…") }
    }

    /// `--print-digest`: a `sha256sum` line, or with `--json` a `digest` event (the stream
    /// stays JSON lines, and `finish` stays last).
    func printDigest(_ digest: DigestValue, path: String) {
        printLine(style == .json ? ProgressRenderer.json(digest: digest, path: path) : "\(digest.hex)  \(path == "standard output" ? "-" : TerminalText.escaped(path))")
    }

    func finish(_ summary: DownloadSummary) {
        if verbose, style != .json, let first = summary.firstByteSeconds {
            note("first byte to \(summary.path) after \(formatDecimal(first, places: 2)) s")
        }
        switch style {
        case .json: printLine(ProgressRenderer.json(.finished(summary)))
        case .bar:
            if summary.streamed {
                let speed = ByteCount.format(Int64(summary.bytesPerSecond))
                note("sent \(ByteCount.format(summary.bytes)) to \(summary.path) in \(formatDecimal(summary.elapsedSeconds, places: 2)) s (\(speed)/s)")
            } else if summary.alreadyComplete {
                note("\(summary.path) is already complete (\(ByteCount.format(summary.bytes)))")
            } else {
                let speed = ByteCount.format(Int64(summary.bytesPerSecond))
                note("saved \(summary.path) (\(ByteCount.format(summary.bytes)) in \(formatDecimal(summary.elapsedSeconds, places: 2)) s, \(speed)/s)")
            }
        case .silent: break
        }
    }

    func fail(_ error: DownloadError, status: Int32) {
        clearBar()
        if style == .json { printLine(ProgressRenderer.json(error: error, exitCode: status)) }
        writeError("rangefetch: error: \(TerminalText.escaped(error.cliMessage))\n")
    }

    /// One line on stderr; server text in it (ETags, keys, names) is escaped, not obeyed.
    /// "warning", or "note" for a routine event (a slow connection replaced) shown with -v: it is
    /// the download working as meant, not something to act on.
    static func label(_ warning: DownloadWarning) -> String { warning.isRoutine ? "note" : "warning" }

    /// A warning in the CLI's words: the library's, naming the flag where one caused it.
    static func words(_ warning: DownloadWarning) -> String {
        switch warning {
        case .certificatesUnchecked:
            "TLS certificates are not checked (--insecure): anyone on the network path can read or change what is downloaded"
        default:
            warning.message
        }
    }

    private func note(_ text: String) {
        clearBar()
        writeError(TerminalText.escaped(text) + "\n")
    }

    /// Redraws the bar in place; with the padding that blanks a longer previous line, it stays
    /// short of the terminal's last column so it never wraps.
    private func drawBar(_ line: String) {
        let room = max(0, Terminal.width() - 1 - line.count)
        let padding = lastBarLength.withLock { previous -> String in
            defer { previous = line.count }
            return String(repeating: " ", count: min(room, max(0, previous - line.count)))
        }
        writeError("\r" + line + padding)
    }

    private func clearBar() {
        let length = lastBarLength.withLock { previous -> Int in
            defer { previous = 0 }
            return previous
        }
        if length > 0 { writeError("\r" + String(repeating: " ", count: length) + "\r") }
    }

    private func printLine(_ text: String) {
        writeOut(text + "\n", to: reports)
    }

    private func writeError(_ text: String) {
        writeOut(text, to: STDERR_FILENO)
    }
}
