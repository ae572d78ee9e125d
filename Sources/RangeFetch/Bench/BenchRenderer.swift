import RangeFetchBase
import RangeFetchNetwork

/// Turns bench results into JSON lines, CSV, a table and a text bar chart.
package enum BenchRenderer {
    /// One `bench_step` JSON object (no trailing newline). Rates in bytes per second.
    public static func json(step: BenchStep, sink: BenchPlan.Sink) -> String {
        var object = JSONObject()
        object.add("event", "bench_step")
        object.add("connections", step.connections)
        object.add("sink", sink.rawValue)
        object.add("runs", step.samples.count)
        object.add("bytes_per_second", step.medianBytesPerSecond, places: 0)
        object.add("bytes_per_second_min", step.minimumBytesPerSecond, places: 0)
        object.add("bytes_per_second_max", step.maximumBytesPerSecond, places: 0)
        object.add("slowest_connection_bytes_per_second", step.slowestConnectionBytesPerSecond, places: 0)
        object.add("fastest_connection_bytes_per_second", step.fastestConnectionBytesPerSecond, places: 0)
        object.add("time_to_first_byte_seconds", step.timeToFirstByteSeconds, places: 6)
        object.add("connect_seconds", step.connectSeconds, places: 6)
        object.add("cpu_seconds_per_gib", step.cpuSecondsPerGiB, places: 3)
        object.add("retries", step.retries)
        object.add("requests", step.requests)
        object.add("pushbacks", step.pushbacks)
        object.add("pushback_status", step.pushbackStatus.map(Int64.init))
        object.add("admitted_connections", step.admittedConnections)
        object.add("tcp_connections", step.tcpConnections)
        object.add("protocol", step.httpVersion)
        object.add("bytes", step.medianBytes)
        object.add("seconds", step.medianSeconds, places: 3)
        return object.text
    }

    /// The `bench_summary` JSON object that ends the output.
    public static func json(summary report: BenchReport) -> String {
        let verdict = report.verdict
        var object = JSONObject()
        object.add("event", "bench_summary")
        object.add("url", Redaction.url(report.url))
        object.add("size", report.size)
        object.add("sink", report.sink.rawValue)
        object.add("one_stream", report.oneStreamReason != nil)
        object.add("note", report.oneStreamReason)
        object.add("steps", report.steps.count)
        object.add("protocol", report.steps.lazy.compactMap(\.httpVersion).first)
        object.add("recommended_connections", verdict.recommendedConnections)
        object.add("best_connections", verdict.best.connections)
        object.add("best_bytes_per_second", verdict.best.bytesPerSecond, places: 0)
        object.add("null_sink_bytes_per_second", report.nullSinkAtKnee?.medianBytesPerSecond, places: 0)
        object.add("limit", verdict.limit.rawValue)
        object.add("verdict", verdict.summary)
        return object.text
    }

    /// The CSV header and one row per step (rates in bytes per second, times in seconds).
    public static func csv(_ report: BenchReport) -> String {
        var lines = ["connections,sink,runs,bytes_per_second,bytes_per_second_min,bytes_per_second_max,slowest_connection_bytes_per_second,fastest_connection_bytes_per_second,time_to_first_byte_seconds,connect_seconds,cpu_seconds_per_gib,retries"]
        let rows = report.steps.map { ($0, report.sink) } + (report.nullSinkAtKnee.map { [($0, BenchPlan.Sink.null)] } ?? [])
        for (step, sink) in rows {
            lines.append([String(step.connections), sink.rawValue, String(step.samples.count),
                          formatDecimal(step.medianBytesPerSecond, places: 0), formatDecimal(step.minimumBytesPerSecond, places: 0),
                          formatDecimal(step.maximumBytesPerSecond, places: 0),
                          formatDecimal(step.slowestConnectionBytesPerSecond, places: 0),
                          formatDecimal(step.fastestConnectionBytesPerSecond, places: 0),
                          formatDecimal(step.timeToFirstByteSeconds, places: 6), formatDecimal(step.connectSeconds, places: 6),
                          formatDecimal(step.cpuSecondsPerGiB, places: 3), String(step.retries)].joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The table for a terminal, one row per step, under a caption naming the units; fits 80
    /// columns. Rates share one unit (the best step's) so the columns line up.
    public static func table(_ report: BenchReport) -> String {
        let all = report.steps + (report.nullSinkAtKnee.map { [$0] } ?? [])
        let (unitName, unitBytes) = unit(for: all.map(\.medianBytesPerSecond).max() ?? 0)
        let number = { (rate: Double) in formatDecimal(rate / unitBytes, places: 1) }
        let header = ["conns", "TCP", "\(unitName)/s", "±", "slowest", "fastest", "TTFB ms", "setup ms", "CPU s/GiB", "retries"]
        var rows: [[String]] = []
        let steps = report.steps.map { ($0, "") } + (report.nullSinkAtKnee.map { [($0, " null")] } ?? [])
        for (step, label) in steps {
            let spread = (step.maximumBytesPerSecond - step.minimumBytesPerSecond) / 2
            rows.append(["\(step.connections)\(label)", step.tcpConnections > 0 ? String(step.tcpConnections) : "-",
                         number(step.medianBytesPerSecond), step.samples.count > 1 ? number(spread) : "-",
                         number(step.slowestConnectionBytesPerSecond), number(step.fastestConnectionBytesPerSecond),
                         formatDecimal(step.timeToFirstByteSeconds * 1000, places: 1), formatDecimal(step.connectSeconds * 1000, places: 1),
                         formatDecimal(step.cpuSecondsPerGiB, places: 2),
                         step.pushbacks > 0 ? "\(step.retries)+\(step.pushbacks)×\(step.pushbackStatus ?? 503)" : String(step.retries)])
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        let line = { (cells: [String]) in
            cells.enumerated().map { index, cell in String(repeating: " ", count: widths[index] - cell.count) + cell }
                .joined(separator: "  ")
        }
        let runs = report.steps.first?.samples.count ?? 0
        let over = report.steps.lazy.compactMap(\.httpVersion).first.map { ", responses over \($0)" } ?? ""
        var caption = "\(unitName)/s: median of \(runs) run\(runs == 1 ? "" : "s")\(runs > 1 ? " (± half the spread)" : ""); slowest/fastest: one connection\n"
            + "TCP: most TCP connections open at once\(over)"
        if let refused = report.steps.first(where: { $0.pushbacks > 0 }) {
            let status = refused.pushbackStatus ?? 503
            caption += "\n+N×\(status): requests refused with HTTP \(status) and sent again after a pause"
        }
        return ([caption, line(header)] + rows.map(line)).joined(separator: "\n") + "\n"
    }

    /// The largest binary unit (B, KiB, MiB, GiB) in which `bytesPerSecond` is at least 10, and
    /// its size: the best step reads as 10 to 10239.9 units, slower ones keep a useful digit.
    static func unit(for bytesPerSecond: Double) -> (String, Double) {
        var name = "B", size = 1.0
        for next in ["KiB", "MiB", "GiB"] where bytesPerSecond >= size * 1024 * 10 {
            name = next
            size *= 1024
        }
        return (name, size)
    }

    /// A horizontal bar per step, scaled to the best, at most `width` columns wide.
    public static func chart(_ report: BenchReport, width: Int = 80) -> String {
        let best = report.steps.map(\.medianBytesPerSecond).max() ?? 0
        let labels = report.steps.map { String($0.connections) }
        let labelWidth = labels.map(\.count).max() ?? 1
        let rates = report.steps.map { rate($0.medianBytesPerSecond) }
        let rateWidth = rates.map(\.count).max() ?? 0
        let barWidth = max(10, width - labelWidth - rateWidth - 4)
        var lines: [String] = []
        for (index, step) in report.steps.enumerated() {
            let filled = best > 0 ? Int((step.medianBytesPerSecond / best * Double(barWidth)).rounded()) : 0
            let label = String(repeating: " ", count: labelWidth - labels[index].count) + labels[index]
            let bar = String(repeating: "█", count: filled) + String(repeating: " ", count: barWidth - filled)
            lines.append("\(label) │\(bar) \(rates[index])")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The closing lines: the recommendation and the verdict, word-wrapped to `width` columns
    /// with continuation lines indented.
    public static func conclusion(_ report: BenchReport, width: Int = 80) -> String {
        let verdict = report.verdict
        var paragraphs: [String] = []
        if let note = report.oneStreamReason { paragraphs.append("note: one-stream measurement: \(note)") }
        paragraphs.append("recommended: -n \(verdict.recommendedConnections) (the fewest connections within 5% of the best, \(rate(verdict.best.bytesPerSecond)) at \(verdict.best.connections))")
        paragraphs.append("verdict: \(verdict.summary)")
        return paragraphs.map { wrap($0, width: width, indent: "  ") }.joined(separator: "\n") + "\n"
    }

    /// `text` broken at spaces into lines of at most `width - 1` characters (longer words stay
    /// whole); lines after the first start with `indent`.
    static func wrap(_ text: String, width: Int, indent: String) -> String {
        let limit = max(20, width - 1)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            let candidate = line.isEmpty ? (lines.isEmpty ? "" : indent) + word : line + " " + word
            if candidate.count > limit && !line.isEmpty {
                lines.append(line)
                line = indent + word
            } else {
                line = candidate
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    static func rate(_ bytesPerSecond: Double) -> String { ByteCount.format(Int64(bytesPerSecond)) + "/s" }

    static func milliseconds(_ seconds: Double) -> String { formatDecimal(seconds * 1000, places: 1) + " ms" }
}
