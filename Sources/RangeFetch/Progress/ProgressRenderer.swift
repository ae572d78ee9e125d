import RangeFetchBase
import RangeFetchNetwork

/// Turns download events into text for people (a one-line bar) or programs (JSON lines).
package enum ProgressRenderer {
    /// The live bar's line, without the leading carriage return:
    /// `[#########---------------]  42.0%  420.0 MiB / 1.0 GiB  105.3 MiB/s  ETA 0:06  16 conns`.
    /// - Parameters:
    ///   - progress: the progress to draw.
    ///   - width: columns of the bar graphic.
    public static func bar(_ progress: DownloadProgress, width: Int = 24) -> String {
        BarParts(progress).line(graphicWidth: width, eta: true, connections: true, total: true)
    }

    /// The live bar fitted to a terminal `columns` wide: at most `columns - 1` characters, so a
    /// `\r` redraw never wraps (and so never scrolls). Parts go in this order as space runs out:
    /// the bar graphic (first shrunk from 30 to 10 columns), the ETA, the connection count, the
    /// total size; what is left is cut.
    public static func bar(_ progress: DownloadProgress, columns: Int) -> String {
        let limit = max(1, columns - 1)
        let parts = BarParts(progress)
        if parts.hasGraphic {
            let overhead = parts.line(graphicWidth: minimumGraphicWidth, eta: true, connections: true, total: true).count - minimumGraphicWidth
            let room = limit - overhead
            if room >= minimumGraphicWidth {
                return parts.line(graphicWidth: min(room, maximumGraphicWidth), eta: true, connections: true, total: true)
            }
        }
        for (eta, connections, total) in [(true, true, true), (false, true, true), (false, false, true), (false, false, false)] {
            let line = parts.line(graphicWidth: 0, eta: eta, connections: connections, total: total)
            if line.count <= limit { return line }
        }
        return String(parts.line(graphicWidth: 0, eta: false, connections: false, total: false).prefix(limit))
    }

    static let minimumGraphicWidth = 10
    static let maximumGraphicWidth = 30

    /// The pieces of a bar line, formatted once.
    private struct BarParts {
        var fraction: Double?
        var percent: String?
        var received: String
        var total: String?
        var speed: String
        var eta: String?
        var connections: String

        init(_ progress: DownloadProgress) {
            fraction = progress.fraction
            percent = progress.fraction.map { ProgressRenderer.pad(formatDecimal($0 * 100, places: 1), 5) + "%" }
            received = ByteCount.format(progress.receivedBytes)
            total = progress.totalBytes.map(ByteCount.format)
            speed = "\(ByteCount.format(Int64(progress.bytesPerSecond)))/s"
            eta = progress.etaSeconds.map { "ETA \(ProgressRenderer.duration($0))" }
            // TCP connections, once they are up (requests still connecting count until then).
            let open = progress.tcpConnections > 0 ? progress.tcpConnections : progress.activeConnections
            var count = "\(open)"
            if progress.targetConnections > 0 && progress.targetConnections != open {
                count += "/\(progress.targetConnections)"
            }
            connections = "\(count) conn\(open == 1 && progress.targetConnections <= 1 ? "" : "s")"
            if let version = progress.httpVersion { connections += " \(version)" }
        }

        var hasGraphic: Bool { fraction != nil }

        func line(graphicWidth: Int, eta showETA: Bool, connections showConnections: Bool, total showTotal: Bool) -> String {
            var parts: [String] = []
            if let fraction, let percent {
                if graphicWidth > 0 {
                    let filled = min(graphicWidth, Int((fraction * Double(graphicWidth)).rounded(.down)))
                    parts.append("[" + String(repeating: "#", count: filled) + String(repeating: "-", count: graphicWidth - filled) + "] " + percent)
                } else {
                    parts.append(String(percent.trimmingASCIIWhitespace()))
                }
            }
            parts.append(showTotal && total != nil ? "\(received) / \(total!)" : received)
            parts.append(speed)
            if showETA, let eta { parts.append(eta) }
            if showConnections { parts.append(connections) }
            return parts.joined(separator: "  ")
        }
    }

    /// One `--verbose` line for a request that ended:
    /// `bytes 0-1048575: HTTP 206, 1.0 MiB in 0.12 s (8.3 MiB/s)`, then how its connection came
    /// about (`new connection in 4 ms` or `reused connection`) and `first byte after 6 ms`, plus
    /// `, retry 2` and `, failed: reason` when they apply.
    public static func requestLine(_ end: RequestEnd) -> String {
        var text = end.range.map { "bytes \($0.lower)-\($0.upper - 1)" } ?? "whole file"
        text += ": " + (end.status == 0 ? "no response" : "HTTP \(end.status)")
        if let version = end.httpVersion { text += " (\(version))" }
        text += ", \(ByteCount.format(end.bytes)) in \(formatDecimal(end.seconds, places: 2)) s (\(ByteCount.format(Int64(end.bytesPerSecond)))/s)"
        if let new = end.newConnection {
            text += new ? ", new connection in \(milliseconds(end.setupSeconds ?? 0))" : ", reused connection"
        }
        if let firstByte = end.firstByteSeconds, end.status != 0 { text += ", first byte after \(milliseconds(firstByte))" }
        if end.packetsOutOfOrder == true { text += ", packets arrived out of order" }
        if end.retry > 0 { text += ", retry \(end.retry)" }
        if let failure = end.failure { text += ", failed: \(failure)" }
        return text
    }

    private static func milliseconds(_ seconds: Double) -> String {
        seconds < 0.01 ? "\(formatDecimal(seconds * 1000, places: 1)) ms" : "\(Int((seconds * 1000).rounded())) ms"
    }

    /// One JSON object for `event` (no trailing newline).
    public static func json(_ event: DownloadEvent) -> String {
        jsonObject(event).text
    }

    /// One JSON object for an event of the file at `index` of a batch: the same fields plus
    /// `index`, `url` and, once known, `path`.
    public static func json(_ event: DownloadEvent, index: Int, url: String, path: String?) -> String {
        var object = jsonObject(event)
        object.add("index", index)
        object.add("url", Redaction.url(url), unlessPresent: true)
        if let path { object.add("path", path, unlessPresent: true) }
        return object.text
    }

    static func jsonObject(_ event: DownloadEvent) -> JSONObject {
        var object = JSONObject()
        switch event {
        case .probed(let remote):
            object.add("event", "probed")
            object.add("url", Redaction.url(remote.url))
            // Where the probe was answered from: the URL the first requests go to.
            object.add("final_url", Redaction.url(Source(remote: remote).requestURL))
            object.add("size", remote.size)
            object.add("accepts_ranges", remote.acceptsRanges)
            object.add("etag", remote.etag)
            object.add("last_modified", remote.lastModified)
            object.add("name", remote.suggestedName)
        case .started(let start):
            object.add("event", "start")
            object.add("path", start.path)
            object.add("total_bytes", start.totalBytes)
            object.add("resumed_bytes", start.resumedBytes)
            object.add("segments", start.segments)
            object.add("connections", start.connections)
            object.add("adaptive", start.adaptive)
            object.add("segmented", start.segmented)
        case .progress(let progress):
            object.add("event", "progress")
            object.add("received_bytes", progress.receivedBytes)
            object.add("total_bytes", progress.totalBytes)
            object.add("bytes_per_second", Int64(progress.bytesPerSecond))
            object.add("eta_seconds", progress.etaSeconds, places: 1)
            object.add("active_connections", progress.activeConnections)
            object.add("target_connections", progress.targetConnections)
            object.add("tcp_connections", progress.tcpConnections)
            object.add("protocol", progress.httpVersion)
        case .retrying(let notice):
            object.add("event", "retry")
            object.add("range", notice.remaining.map { $0.isEmpty ? "" : $0.httpRangeSpec })
            object.add("retry", notice.retry)
            object.add("delay_seconds", notice.delaySeconds, places: 2)
            object.add("reason", notice.reason)
        case .warning(let warning):
            object.add("event", "warning")
            object.add("kind", warning.kind)
            object.add("message", warning.message)
        case .requestEnded(let end):
            object.add("event", "request")
            object.add("range", end.range.map { $0.isEmpty ? "" : $0.httpRangeSpec })
            object.add("status", end.status)
            object.add("bytes", end.bytes)
            object.add("seconds", end.seconds, places: 3)
            object.add("bytes_per_second", Int64(end.bytesPerSecond))
            object.add("retry", end.retry)
            object.add("failure", end.failure)
            object.add("protocol", end.httpVersion)
            if let new = end.newConnection { object.add("new_connection", new) }
            if let setup = end.setupSeconds { object.add("setup_seconds", setup, places: 4) }
            if let firstByte = end.firstByteSeconds { object.add("first_byte_seconds", firstByte, places: 4) }
            if let outOfOrder = end.packetsOutOfOrder { object.add("packets_out_of_order", outOfOrder) }
        case .verified(let digest, let source):
            object.add("event", "verified")
            object.add("algorithm", digest.algorithm.rawValue)
            object.add("digest", digest.hex)
            object.add("source", source)
        case .finished(let summary):
            object.add("event", "finish")
            object.add("path", summary.path)
            object.add("bytes", summary.bytes)
            object.add("transferred_bytes", summary.transferredBytes)
            object.add("resumed_bytes", summary.resumedBytes)
            object.add("elapsed_seconds", summary.elapsedSeconds, places: 3)
            object.add("bytes_per_second", Int64(summary.bytesPerSecond))
            object.add("already_complete", summary.alreadyComplete)
            object.add("verification_seconds", summary.verificationSeconds, places: 4)
            object.add("first_byte_seconds", summary.firstByteSeconds, places: 4)
        }
        return object
    }

    /// The JSON line for a failure: its category, message and exit code, and the URL it is
    /// about (``DownloadError/url``, redacted) when there is one.
    public static func json(error: DownloadError, exitCode: Int32) -> String {
        var object = errorObject(error, exitCode: exitCode, event: "error")
        if let url = error.url { object.add("url", url) }
        return object.text
    }

    static func errorObject(_ error: DownloadError, exitCode: Int32, event: String) -> JSONObject {
        var object = JSONObject()
        object.add("event", event)
        object.add("category", error.category.description)
        object.add("message", error.message)
        object.add("exit_code", Int64(exitCode))
        return object
    }

    /// `m:ss` or `h:mm:ss`.
    public static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.up))
        let (hours, minutes, secs) = (total / 3600, (total % 3600) / 60, total % 60)
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))" : "\(minutes):\(twoDigits(secs))"
    }

    fileprivate static func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}

/// A flat JSON object built field by field, with correct string escaping. Every object starts
/// with `"version":` ``schemaVersion`` (see docs/events.schema.json).
extension ProgressRenderer {
    /// The `digest` JSON event: a file's digest printed on request (`--print-digest`), not a check.
    public static func json(digest: DigestValue, path: String) -> String {
        var object = JSONObject()
        object.add("event", "digest")
        object.add("algorithm", digest.algorithm.rawValue)
        object.add("digest", digest.hex)
        object.add("path", path)
        return object.text
    }
}

struct JSONObject {
    /// The version of the event format; it changes only when a field changes meaning or goes away
    /// (new events and fields may appear without a change).
    static let schemaVersion = 1

    private var fields: [String] = ["\"version\":\(JSONObject.schemaVersion)"]
    private var keys: Set<String> = ["version"]

    /// A number with `places` decimals (`null` when absent or not finite).
    mutating func add(_ key: String, _ value: Double?, places: Int) {
        add(key, raw: value.flatMap { $0.isFinite ? formatDecimal($0, places: places) : nil } ?? "null")
    }

    mutating func add(_ key: String, _ value: String?) {
        add(key, raw: value.map(Self.quote) ?? "null")
    }

    /// Adds `value` unless the object already has `key` (when `unlessPresent`).
    mutating func add(_ key: String, _ value: String, unlessPresent: Bool) {
        if !(unlessPresent && keys.contains(key)) { add(key, value) }
    }

    /// Adds already-encoded JSON (an array or object).
    mutating func add(_ key: String, raw: String) {
        keys.insert(key)
        fields.append("\(Self.quote(key)):\(raw)")
    }

    mutating func add(_ key: String, _ value: Int64?) {
        add(key, raw: value.map { String($0) } ?? "null")
    }

    mutating func add(_ key: String, _ value: Int) { add(key, Int64(value)) }

    mutating func add(_ key: String, _ value: Bool) {
        add(key, raw: "\(value)")
    }

    var text: String { "{" + fields.joined(separator: ",") + "}" }

    /// Appends ``quote(_:)``'s bytes to `bytes`; text with nothing to escape is copied whole.
    static func quote(_ text: String, into bytes: inout [UInt8]) {
        if needsEscaping(text) {
            bytes.append(contentsOf: quote(text).utf8)
        } else {
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: text.utf8)
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// Whether `text` holds a control character, a quote or a backslash.
    private static func needsEscaping(_ text: String) -> Bool {
        text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
    }

    static func quote(_ text: String) -> String {
        // Most text has nothing to escape: copied whole, not a scalar at a time.
        if !needsEscaping(text) {
            return "\"" + text + "\""
        }
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\u{8}": result += "\\b"
            case "\u{C}": result += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
