import RangeFetchBase
import RangeFetchNetwork

/// Text for a batch: JSON lines for its own events and the final table.
package enum BatchRenderer {
    /// The JSON line of a batch-level event; per-file events use
    /// `ProgressRenderer.json(_:index:url:path:)`, so this returns `nil` for them.
    /// - Parameters:
    ///   - event: the batch event.
    ///   - url: the URL of the file at a list index (redacted).
    ///   - exitCode: maps a failed file's error to the exit status it would have alone.
    public static func json(_ event: BatchEvent, url: (Int) -> String, exitCode: (DownloadError) -> Int32) -> String? {
        switch event {
        case .started(let start):
            var object = JSONObject()
            object.add("event", "batch_start")
            object.add("files", start.files)
            object.add("jobs", start.jobs)
            object.add("max_connections", start.maximumConnections)
            object.add("max_connections_per_host", start.maximumConnectionsPerHost)
            return object.text
        case .failed(let index, let error):
            var object = ProgressRenderer.errorObject(error, exitCode: exitCode(error), event: "file_failed")
            object.add("index", index)
            object.add("url", url(index))
            return object.text
        case .finished(let summary):
            var object = JSONObject()
            object.add("event", "batch_finish")
            object.add("files", summary.fileCount)
            for status in [BatchFileResult.Status.downloaded, .alreadyComplete, .failed, .interrupted, .notStarted] {
                object.add(status.rawValue.replacingHyphens, summary.count(status))
            }
            object.add("transferred_bytes", summary.transferredBytes)
            object.add("elapsed_seconds", summary.elapsedSeconds, places: 3)
            let results = summary.files.map { fileObject($0, exitCode: exitCode).text }
            object.add("results", raw: "[" + results.joined(separator: ",") + "]")
            object.add("results_omitted", summary.omittedFiles)
            return object.text
        case .warning(let warning):
            var object = JSONObject()
            object.add("event", "warning")
            object.add("kind", warning.kind)
            object.add("message", warning.message)
            return object.text
        case .file, .queued:
            return nil
        }
    }

    private static func fileObject(_ result: BatchFileResult, exitCode: (DownloadError) -> Int32) -> JSONObject {
        var object = JSONObject()
        object.add("index", result.index)
        object.add("url", Redaction.url(result.url))
        object.add("path", result.path)
        object.add("status", result.status.rawValue)
        object.add("bytes", result.bytes)
        object.add("transferred_bytes", result.transferredBytes)
        object.add("elapsed_seconds", result.elapsedSeconds, places: 3)
        object.add("bytes_per_second", Int64(result.bytesPerSecond))
        object.add("error", result.error?.message)
        object.add("exit_code", result.error.map { Int64(exitCode($0)) })
        return object
    }

    /// Every file with status, size, time and speed, then a totals line:
    /// ```
    /// #    status            size      time   speed       file
    /// 1    downloaded        64.0 KiB  0.01 s 6.2 MiB/s   ./a.bin
    /// ```
    ///
    /// A file that did not finish shows the bytes it holds (its partial file resumes); a failed
    /// one's error follows on a line of its own. With `columns`, no line is longer (a terminal's
    /// width: lines end in `…` rather than wrap).
    public static func table(_ summary: BatchSummary, columns: Int? = nil) -> String {
        var lines = [row("#", "status", "size", "time", "speed", "file")]
        for result in summary.files {
            let moved = result.status == .downloaded || result.status == .interrupted
            lines.append(row(
                "\(result.index + 1)", result.status.rawValue,
                result.path == nil ? "-" : ByteCount.format(result.bytes),
                result.status == .notStarted ? "-" : formatDecimal(result.elapsedSeconds, places: 2) + " s",
                moved && result.transferredBytes > 0 ? ByteCount.format(Int64(result.bytesPerSecond)) + "/s" : "-",
                TerminalText.escaped(result.path ?? Redaction.url(result.url))))
            if result.status == .failed, let error = result.error { lines.append("     error: \(TerminalText.escaped(error.message))") }
        }
        let speed = summary.elapsedSeconds > 0 ? Double(summary.transferredBytes) / summary.elapsedSeconds : 0
        var counts = ["\(summary.count(.downloaded)) downloaded"]
        for status in [BatchFileResult.Status.alreadyComplete, .failed, .interrupted, .notStarted] where summary.count(status) > 0 {
            counts.append("\(summary.count(status)) \(status.rawValue)")
        }
        if summary.omittedFiles > 0 {
            lines.append("(\(summary.omittedFiles) complete files not listed: the table lists every file of a batch of at most \(BatchSummary.keptResults))")
        }
        lines.append("\(summary.fileCount) files: \(counts.joined(separator: ", ")); \(ByteCount.format(summary.transferredBytes)) in \(formatDecimal(summary.elapsedSeconds, places: 2)) s (\(ByteCount.format(Int64(speed)))/s)")
        guard let columns, columns > 1 else { return lines.joined(separator: "\n") }
        return lines.map { $0.count > columns ? String($0.prefix(columns - 1)) + "…" : $0 }.joined(separator: "\n")
    }

    private static func row(_ number: String, _ status: String, _ size: String, _ time: String, _ speed: String, _ file: String) -> String {
        [pad(number, 5), pad(status, 17), pad(size, 11), pad(time, 10), pad(speed, 13), file].joined()
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

private extension String {
    var replacingHyphens: String { String(map { $0 == "-" ? "_" : $0 }) }
}
