import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch
import RangeFetchDaemon

/// Where the running daemon is and how to prove we may call it: the options every verb shares.
struct DaemonAddress: ParsableArguments {
    @Option(name: .customLong("rpc-port"), help: ArgumentHelp("The daemon's port.", valueName: "port"))
    var port = 6800

    @Option(name: .customLong("rpc-secret"), help: ArgumentHelp("The daemon's secret (default: read from the state directory's rpc-secret).", valueName: "secret"))
    var secret: String?

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("The daemon's state directory, where its secret is kept (default $XDG_STATE_HOME/rangefetch, else ~/.local/state/rangefetch).", valueName: "dir"))
    var stateDirectory: String?

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--rpc-port must be 1-65535") }
    }

    /// A client for the daemon; the secret is read (never made) from the state directory.
    func client() throws -> DaemonClient {
        if let secret { return DaemonClient(port: port, secret: secret) }
        do {
            let kept = try DaemonSecret.existing(in: stateDirectory ?? DaemonSecret.defaultDirectory())
            return DaemonClient(port: port, secret: kept)
        } catch {
            throw DaemonVerb.fail("\(error)", status: ExitStatus.fileSystem)
        }
    }
}

/// What the verbs share: calling, failing with one clear line, and reading aria2's status shapes.
enum DaemonVerb {
    static func fail(_ message: String, status: Int32 = ExitStatus.other) -> CommandFailure {
        writeOut("rangefetch: error: \(message)\n", to: STDERR_FILENO)
        return CommandFailure(status: status)
    }

    static func call(_ client: DaemonClient, _ method: String, _ params: [JSON] = []) throws -> JSON {
        do {
            return try client.call(method, params)
        } catch {
            throw fail(error.description, status: error.unreachable ? ExitStatus.network : ExitStatus.other)
        }
    }

    /// Runs `method(gid)` for each of `ids`; every failure is said, and the exit status is 1
    /// when any failed.
    static func each(_ ids: [String], _ client: DaemonClient, _ method: String, done: String) throws {
        var failed = false
        for id in ids {
            do {
                let gid = try client.call(method, [.string(id)]).string ?? id
                writeOut("\(done) \(gid)\n", to: STDOUT_FILENO)
            } catch {
                if error.unreachable { throw fail(error.description, status: ExitStatus.network) }
                writeOut("rangefetch: error: \(id): \(error.description)\n", to: STDERR_FILENO)
                failed = true
            }
        }
        if failed { throw CommandFailure(status: ExitStatus.other) }
    }

    static let statusKeys: [JSON] = ["gid", "status", "totalLength", "completedLength", "downloadSpeed", "connections", "files",
                                     "errorMessage"].map(JSON.string)

    /// Every download the daemon knows, running first, then waiting (in queue order), then stopped.
    static func queue(_ client: DaemonClient) throws -> [[String: JSON]] {
        let keys = JSON.array(statusKeys)
        let active = try call(client, "aria2.tellActive", [keys]).array ?? []
        let waiting = try call(client, "aria2.tellWaiting", [.number(0), .number(100_000), keys]).array ?? []
        let stopped = try call(client, "aria2.tellStopped", [.number(0), .number(100_000), keys]).array ?? []
        return (active + waiting + stopped).compactMap(\.object)
    }

    /// The queue as a table, one download a line:
    /// `GID               STATUS    DONE   SIZE       SPEED       CONNS  NAME`.
    static func table(_ downloads: [[String: JSON]]) -> String {
        var lines = [pad("GID", 17) + pad("STATUS", 10) + pad("DONE", 7) + pad("SIZE", 11) + pad("SPEED", 12) + pad("CONNS", 7) + "NAME"]
        for download in downloads {
            let total = Int64(download["totalLength"]?.string ?? "") ?? 0
            let done = Int64(download["completedLength"]?.string ?? "") ?? 0
            let speed = Int64(download["downloadSpeed"]?.string ?? "") ?? 0
            let status = download["status"]?.string ?? "?"
            let percent = total > 0 ? "\(done * 100 / total)%" : "-"
            let path = download["files"]?.array?.first?.object?["path"]?.string ?? ""
            var name = path.split(separator: "/").last.map(String.init) ?? ""
            if name.isEmpty {
                name = download["files"]?.array?.first?.object?["uris"]?.array?.first?.object?["uri"]?.string ?? ""
            }
            if status == "error", let message = download["errorMessage"]?.string { name += "  (\(message))" }
            lines.append(pad(download["gid"]?.string ?? "?", 17) + pad(status, 10) + pad(percent, 7)
                         + pad(total > 0 ? ByteCount.format(total) : "-", 11)
                         + pad(status == "active" ? ByteCount.format(speed) + "/s" : "-", 12)
                         + pad(download["connections"]?.string ?? "0", 7) + TerminalText.escaped(name))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

/// `rangefetch add URL…`: each URL becomes a download in the running daemon's queue.
struct AddVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add downloads to a running `rangefetch daemon`.",
        discussion: """
        Each URL becomes one download at the end of the daemon's queue; its GID is printed. \
        The daemon writes the file under its own --dir: -d and -o name a place inside it.

        Examples:
          rangefetch add https://example.com/big.iso
          rangefetch add -d isos -o debian.iso --pause https://example.com/debian.iso
        """)

    @OptionGroup var address: DaemonAddress

    @Option(name: [.customShort("d"), .customLong("dir")], help: ArgumentHelp("A directory inside the daemon's download root.", valueName: "dir"))
    var directory: String?

    @Option(name: [.customShort("o"), .customLong("out")], help: ArgumentHelp("The file's name (one URL only).", valueName: "name"))
    var out: String?

    @Option(name: [.customShort("n"), .customLong("connections")], help: ArgumentHelp("Connections for each download (1-64).", valueName: "n"))
    var connections: Int?

    @Option(name: .customLong("checksum"), help: ArgumentHelp("The file's digest, checked before it is put in place.", valueName: "sha-256=HEX"))
    var checksum: String?

    @Flag(name: .customLong("pause"), help: "Add them paused.")
    var paused = false

    @Argument(help: ArgumentHelp("The URLs (http, https, s3).", valueName: "url"))
    var urls: [String]

    func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one URL") }
        guard out == nil || urls.count == 1 else { throw ValidationError("-o names one file: give one URL with it") }
        if let connections, !(1...64).contains(connections) { throw ValidationError("-n must be 1-64") }
    }

    func run() throws {
        let client = try address.client()
        var options: [String: JSON] = [:]
        if let directory { options["dir"] = .string(directory) }
        if let out { options["out"] = .string(out) }
        if let connections { options["split"] = .string(String(connections)) }
        if let checksum { options["checksum"] = .string(checksum) }
        if paused { options["pause"] = .string("true") }
        for url in urls {
            let gid = try DaemonVerb.call(client, "aria2.addUri", [.array([.string(url)]), .object(options)])
            writeOut("added \(gid.string ?? "?")  \(Redaction.url(url))\n", to: STDOUT_FILENO)
        }
    }
}

/// `rangefetch ls`: the daemon's queue, once.
struct ListVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List a running daemon's downloads: running, waiting (in order), then stopped.")

    @OptionGroup var address: DaemonAddress

    @Flag(name: .customLong("json"), help: "aria2's tellStatus objects, one JSON line each.")
    var json = false

    func run() throws {
        let downloads = try DaemonVerb.queue(try address.client())
        if json {
            for download in downloads {
                writeOut(JSON.object(download).text + "\n", to: STDOUT_FILENO)
            }
        } else {
            writeOut(DaemonVerb.table(downloads), to: STDOUT_FILENO)
        }
    }
}

/// Which downloads a verb acts on: GIDs (or unique prefixes), or `--all`.
struct GIDSelection: ParsableArguments {
    @Flag(name: .customLong("all"), help: "Every download.")
    var all = false

    @Argument(help: ArgumentHelp("GIDs, or unique prefixes of them.", valueName: "gid"))
    var ids: [String] = []

    func validate() throws {
        guard all != !ids.isEmpty else { throw ValidationError("give GIDs, or --all") }
    }

    /// `allMethod` once with --all, else `eachMethod` for each GID, saying `done GID` for each.
    func run(_ address: DaemonAddress, all allMethod: String, each eachMethod: String, done: String) throws {
        let client = try address.client()
        if all {
            _ = try DaemonVerb.call(client, allMethod)
            writeOut("\(done) all\n", to: STDOUT_FILENO)
        } else {
            try DaemonVerb.each(ids, client, eachMethod, done: done)
        }
    }
}

/// `rangefetch pause ID…`: answered once each has stopped.
struct PauseVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause downloads of a running daemon (a unique GID prefix will do); --all pauses every one.")

    @OptionGroup var address: DaemonAddress
    @OptionGroup var selection: GIDSelection

    func run() throws {
        try selection.run(address, all: "aria2.pauseAll", each: "aria2.pause", done: "paused")
    }
}

/// `rangefetch resume ID…`: the downloads go on from their journals.
struct ResumeVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume paused downloads of a running daemon; --all resumes every one.")

    @OptionGroup var address: DaemonAddress
    @OptionGroup var selection: GIDSelection

    func run() throws {
        try selection.run(address, all: "aria2.unpauseAll", each: "aria2.unpause", done: "resumed")
    }
}

/// `rangefetch rm ID…`: stops and removes downloads (their partial files go; finished files stay).
struct RemoveVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Remove downloads from a running daemon: a running or waiting one is stopped and its partial file deleted; a stopped one is forgotten (its file stays).")

    @OptionGroup var address: DaemonAddress
    @Argument(help: ArgumentHelp("GIDs, or unique prefixes of them.", valueName: "gid")) var ids: [String]

    func validate() throws {
        guard !ids.isEmpty else { throw ValidationError("give at least one GID") }
    }

    func run() throws {
        let client = try address.client()
        var failed = false
        for id in ids {
            let status = (try? client.call("aria2.tellStatus", [.string(id), .array([.string("status")])]))?.object?["status"]?.string
            let method = ["complete", "error", "removed"].contains(status ?? "") ? "aria2.removeDownloadResult" : "aria2.remove"
            do {
                let gid = try client.call(method, [.string(id)]).string ?? id
                // aria2 keeps a removed download among the stopped until its result is purged;
                // `rm` means gone from the list.
                if method == "aria2.remove" { _ = try? client.call("aria2.removeDownloadResult", [.string(gid)]) }
                writeOut("removed \(id)\n", to: STDOUT_FILENO)
            } catch {
                if error.unreachable { throw DaemonVerb.fail(error.description, status: ExitStatus.network) }
                writeOut("rangefetch: error: \(id): \(error.description)\n", to: STDERR_FILENO)
                failed = true
            }
        }
        if failed { throw CommandFailure(status: ExitStatus.other) }
    }
}

/// `rangefetch watch`: the queue, redrawn every second until Ctrl-C.
struct WatchVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Watch a running daemon's queue, redrawn every second (Ctrl-C ends it).",
        discussion: "On a terminal the table is redrawn in place; otherwise a table is printed each interval, --count times if given.")

    @OptionGroup var address: DaemonAddress

    @Option(name: .customLong("interval"), help: ArgumentHelp("Seconds between redraws.", valueName: "seconds"))
    var interval = 1.0

    @Option(name: .customLong("count"), help: ArgumentHelp("Stop after this many tables (default: until Ctrl-C).", valueName: "n"))
    var count: Int?

    func validate() throws {
        guard interval >= 0.1 else { throw ValidationError("--interval must be at least 0.1 seconds") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() throws {
        let client = try address.client()
        let terminal = isatty(STDOUT_FILENO) != 0
        var shown = 0
        while count.map({ shown < $0 }) ?? true {
            let table = DaemonVerb.table(try DaemonVerb.queue(client))
            // Home and clear on a terminal: the table stays in place.
            writeOut(terminal ? "\u{1B}[H\u{1B}[2J" + table : table + "\n", to: STDOUT_FILENO)
            shown += 1
            if count.map({ shown >= $0 }) ?? false { break }
            usleep(useconds_t(interval * 1_000_000))
        }
    }
}
