/// Turns download events into text for people (a one-line bar) or programs (JSON lines).
public enum ProgressRenderer {
    /// The live bar's line, without the leading carriage return:
    /// ` 42.0%  420.0 MiB / 1.0 GiB  105.3 MiB/s  ETA 0:06  16 conns`.
    public static func bar(_ progress: DownloadProgress, width: Int = 24) -> String {
        var parts: [String] = []
        if let fraction = progress.fraction {
            let filled = Int((fraction * Double(width)).rounded(.down))
            let bar = String(repeating: "#", count: min(filled, width)) + String(repeating: "-", count: max(0, width - filled))
            parts.append("[\(bar)] \(pad(formatDecimal(fraction * 100, places: 1), 5))%")
            parts.append("\(ByteCount.format(progress.receivedBytes)) / \(ByteCount.format(progress.totalBytes ?? 0))")
        } else {
            parts.append(ByteCount.format(progress.receivedBytes))
        }
        parts.append("\(ByteCount.format(Int64(progress.bytesPerSecond)))/s")
        if let eta = progress.etaSeconds { parts.append("ETA \(duration(eta))") }
        var connections = "\(progress.activeConnections)"
        if progress.targetConnections > 0 && progress.targetConnections != progress.activeConnections {
            connections += "/\(progress.targetConnections)"
        }
        parts.append("\(connections) conn\(progress.activeConnections == 1 && progress.targetConnections <= 1 ? "" : "s")")
        return parts.joined(separator: "  ")
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
        object.add("url", url, unlessPresent: true)
        if let path { object.add("path", path, unlessPresent: true) }
        return object.text
    }

    static func jsonObject(_ event: DownloadEvent) -> JSONObject {
        var object = JSONObject()
        switch event {
        case .probed(let remote):
            object.add("event", "probed")
            object.add("url", remote.url)
            object.add("final_url", remote.finalURL)
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
            object.add("eta_seconds", progress.etaSeconds.map { formatDecimal($0, places: 1) })
            object.add("active_connections", progress.activeConnections)
            object.add("target_connections", progress.targetConnections)
        case .retrying(let notice):
            object.add("event", "retry")
            object.add("range", notice.remaining.map { $0.isEmpty ? "" : $0.httpRangeSpec })
            object.add("retry", notice.retry)
            object.add("delay_seconds", formatDecimal(notice.delaySeconds, places: 2))
            object.add("reason", notice.reason)
        case .warning(let message):
            object.add("event", "warning")
            object.add("message", message)
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
            object.add("elapsed_seconds", formatDecimal(summary.elapsedSeconds, places: 3))
            object.add("bytes_per_second", Int64(summary.bytesPerSecond))
            object.add("already_complete", summary.alreadyComplete)
            object.add("verification_seconds", summary.verificationSeconds.map { formatDecimal($0, places: 4) })
        }
        return object
    }

    /// The JSON line for a failure.
    public static func json(error: DownloadError, exitCode: Int32) -> String {
        errorObject(error, exitCode: exitCode, event: "error").text
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

    private static func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}

/// A flat JSON object built field by field, with correct string escaping.
struct JSONObject {
    private var fields: [String] = []
    private var keys: Set<String> = []

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

    static func quote(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
