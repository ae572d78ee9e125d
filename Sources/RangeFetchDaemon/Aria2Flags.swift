/// aria2c's command line as front-ends and aria2p's test fixture pass it, read into what
/// `rangefetch aria2c` (or rangefetch run under the name `aria2c`) does: a pure reading,
/// tested as a table. `--name=value` and `--name value` both work; a `--conf-path` file's
/// `name=value` lines are read as if given first (the command line wins).
///
/// Flags that change nothing here are listed in ``ignored`` (said once at start); anything
/// else unknown is an error naming it.
public struct Aria2Flags: Sendable, Equatable {
    public var directory = "."
    public var port = 6800
    /// `nil`: no token asked (aria2c's rule without `--rpc-secret`).
    public var secret: String?
    public var allowOriginAll = false
    public var enableRPC = false
    public var maximumActive = 5
    public var inputFile: String?
    /// `--save-session FILE`: written in aria2's session format after every change.
    public var saveSession: String?
    public var confPath: String?
    /// Options every added download starts with (`max-download-limit`, `pause`, `split`…).
    public var defaults: [String: String] = [:]
    /// Flags accepted and ignored, as given.
    public var ignored: [String] = []
    /// URIs given on the command line (downloaded by the queue like added ones).
    public var uris: [String] = []

    public struct Problem: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Per-download options (kept as defaults for every download added).
    static let downloadOptions: Set<String> = [
        "max-download-limit", "pause", "split", "max-connection-per-server", "checksum", "header", "out",
    ]

    /// Flags with no effect here (what aria2c would do is done anyway, or does not apply).
    static let ignoredOptions: Set<String> = [
        "file-allocation", "quiet", "continue", "always-resume", "check-certificate", "daemon",
        "save-session-interval", "stop-with-process", "rpc-listen-all", "rpc-save-upload-metadata", "auto-file-renaming",
        "allow-overwrite", "min-split-size", "disk-cache", "console-log-level", "log-level", "log", "summary-interval",
        "enable-color", "show-console-readout", "max-overall-download-limit", "no-conf", "follow-torrent", "seed-time",
        "bt-save-metadata", "rpc-max-request-size", "enable-http-pipelining", "user-agent", "lowest-speed-limit",
        "max-tries", "retry-wait", "timeout", "connect-timeout", "remote-time", "content-disposition-default-utf8",
    ]

    /// Letters aria2c takes a value after.
    static let shortOptions: [Character: String] = [
        "d": "dir", "j": "max-concurrent-downloads", "x": "max-connection-per-server", "s": "split", "i": "input-file",
        "o": "out",
    ]

    /// Reads `arguments`; `readFile` gives a `--conf-path` file's text.
    public static func parse(_ arguments: [String], readFile: (String) -> String?) throws(Problem) -> Aria2Flags {
        var pairs: [(String, String)] = []
        var uris: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                if let equals = body.firstIndex(of: "=") {
                    pairs.append((String(body[..<equals]), String(body[body.index(after: equals)...])))
                } else if index < arguments.count, !arguments[index].hasPrefix("-"), takesValue(String(body)) {
                    pairs.append((String(body), arguments[index]))
                    index += 1
                } else {
                    pairs.append((String(body), "true"))
                }
            } else if argument.hasPrefix("-"), argument.count >= 2 {
                let letter = argument[argument.index(after: argument.startIndex)]
                if letter == "D" || letter == "q" || letter == "c" {
                    pairs.append((letter == "D" ? "daemon" : letter == "q" ? "quiet" : "continue", "true"))
                    continue
                }
                guard let name = shortOptions[letter] else { throw Problem(description: "aria2c option \(argument) is not known to rangefetch") }
                let glued = String(argument.dropFirst(2))
                if !glued.isEmpty {
                    pairs.append((name, glued))
                } else if index < arguments.count {
                    pairs.append((name, arguments[index]))
                    index += 1
                } else {
                    throw Problem(description: "aria2c option \(argument) needs a value")
                }
            } else {
                uris.append(argument)
            }
        }
        var flags = Aria2Flags()
        flags.uris = uris
        if let conf = pairs.last(where: { $0.0 == "conf-path" })?.1 {
            guard let text = readFile(conf) else { throw Problem(description: "--conf-path \(conf): cannot be read") }
            flags.confPath = conf
            try flags.apply(confLines(text), from: conf)
        }
        try flags.apply(pairs.filter { $0.0 != "conf-path" }, from: nil)
        return flags
    }

    static func takesValue(_ name: String) -> Bool {
        !["enable-rpc", "rpc-allow-origin-all", "rpc-listen-all", "quiet", "continue", "daemon", "always-resume",
          "check-certificate", "no-conf", "show-console-readout", "enable-color"].contains(name)
    }

    /// `name=value` lines of a conf file (`#` comments, blank lines skipped).
    static func confLines(_ text: String) -> [(String, String)] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#"), let equals = trimmed.firstIndex(of: "=") else { return nil }
            return (String(trimmed[..<equals]).trimmingTrailingSpaces, String(trimmed[trimmed.index(after: equals)...]))
        }
    }

    private mutating func apply(_ pairs: [(String, String)], from file: String?) throws(Problem) {
        let place = file.map { " (in \($0))" } ?? ""
        for (name, value) in pairs {
            switch name {
            case "dir": directory = value
            case "rpc-listen-port":
                guard let number = Int(value), (1...65535).contains(number) else {
                    throw Problem(description: "--rpc-listen-port must be 1-65535 (got \(value))\(place)")
                }
                port = number
            case "rpc-secret": secret = value.isEmpty ? nil : value
            case "rpc-allow-origin-all": allowOriginAll = value == "true"
            case "enable-rpc": enableRPC = value == "true"
            case "max-concurrent-downloads":
                guard let number = Int(value), number >= 1 else {
                    throw Problem(description: "--max-concurrent-downloads must be at least 1 (got \(value))\(place)")
                }
                maximumActive = number
            case "input-file": inputFile = value
            case "save-session": saveSession = value.isEmpty ? nil : value
            case _ where Self.downloadOptions.contains(name): defaults[name] = value
            case _ where Self.ignoredOptions.contains(name) || name.hasPrefix("bt-") || name.hasPrefix("seed-"):
                ignored.append("--\(name)")
            default:
                throw Problem(description: "aria2c option --\(name)\(place) is not known to rangefetch")
            }
        }
    }
}

/// aria2's input file (its session format): a line of URIs separated by tabs (mirrors of one
/// file), then that download's options, each on a line starting with white space
/// (` gid=…`, ` pause=true`, ` dir=…`). Pure.
public enum Aria2SessionFile {
    public struct Entry: Sendable, Equatable {
        public var uris: [String]
        public var options: [String: String]

        public init(uris: [String], options: [String: String]) {
            self.uris = uris
            self.options = options
        }
    }

    public static func parse(_ text: String) -> [Entry] {
        var entries: [Entry] = []
        for line in text.split(whereSeparator: \.isNewline) {
            if line.first == " " || line.first == "\t" {
                let trimmed = line.drop { $0 == " " || $0 == "\t" }
                guard !entries.isEmpty, let equals = trimmed.firstIndex(of: "=") else { continue }
                entries[entries.count - 1].options[String(trimmed[..<equals])] = String(trimmed[trimmed.index(after: equals)...])
            } else if !line.hasPrefix("#") {
                let uris = line.split(separator: "\t").map(String.init).filter { !$0.isEmpty }
                if !uris.isEmpty { entries.append(Entry(uris: uris, options: [:])) }
            }
        }
        return entries
    }
}

extension String {
    var trimmingTrailingSpaces: String {
        var text = self
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
