import FoundationEssentials
import NIOCore
import RangeFetch

/// aria2's RPC methods on a ``DownloadQueue``: what `aria2.addUri`, `aria2.tellStatus` and the
/// rest mean here, with aria2's result shapes (every number a string, GIDs of 16 hex digits, a
/// unique prefix accepted). A pause or removal is answered once the download has stopped: no
/// byte of it arrives after the answer.
///
/// The actor runs on the RPC server's event loop: a call that needs no waiting (status,
/// options, adding) is answered on the thread that read it, with no hop between threads, which
/// is what keeps answers quick while the downloads keep the CPU busy.
public actor Aria2Service {
    /// One download as the RPC knows it.
    struct Record: Sendable {
        var gid: String
        /// Its entry in the queue; `nil` for one that had stopped before a restart.
        var id: DownloadID?
        var uris: [String]
        var directory: String
        var options: [String: String]
        /// Removed (aria2 keeps it among the stopped until its result is purged).
        var removed = false
        /// What the store said of a download that had stopped before a restart.
        var ended: Ended?
        /// Its speed cap as it runs: its own `max-download-limit`, or its share of
        /// `max-overall-download-limit` when that is lower, changed live.
        var control = SpeedControl()
    }

    struct Ended: Sendable {
        var status: String
        var path: String?
        var length: Int64?
        var error: String?
    }

    /// The option under which a metalink added by `addMetalink` is kept (base64), so that a
    /// restart adds the same download again.
    static let metalinkOption = "rangefetch-metalink"

    let queue: DownloadQueue
    let root: DownloadRoot
    let base: DownloadOptions
    var records: [String: Record] = [:]
    var gids: [DownloadID: String] = [:]
    /// GIDs that stopped (complete, error, removed), oldest first.
    var stopped: [String] = []
    var globalOptions: [String: String] = [:]
    /// Options every added download starts with (aria2's global options that apply to
    /// downloads: `pause`, `max-download-limit`, `split`…); its own options win.
    var defaults: [String: String]
    let sessionID = Aria2Service.randomHex(40)
    /// The queue on disk: every accepted change is committed there before it is answered.
    let store: QueueStore
    /// Held while the service lives: no other daemon runs this queue.
    let lock: StateDirectoryLock
    /// aria2c's `--save-session FILE` (the operator's, so anywhere): rewritten in aria2's
    /// session format after every change to the queue and every download's end.
    let sessionFile: String?
    /// The running downloads' caps were last set as shares of an overall limit.
    var overallLimitShared = false
    /// The last write of ``sessionFile`` failed (said once).
    var sessionFileFailing = false
    /// Called once `aria2.shutdown` has been answered.
    let onShutdown: @Sendable () -> Void
    /// The WebSocket listeners told of each download's start, pause, stop, completion and error.
    public nonisolated let notifications = NotificationHub()
    /// The event loop the actor runs on (the RPC server's).
    nonisolated let eventLoop: any EventLoop

    public nonisolated var unownedExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }

    /// A service adding downloads under `root` with `options`.
    /// The queue is kept in `stateDirectory/queue.sqlite` (``restore()`` reads it back). The
    /// actor runs on `eventLoop`, which must be the one the ``RPCServer`` serves on.
    public init(queue: DownloadQueue, root: String, options: DownloadOptions, stateDirectory: String,
                eventLoop: any EventLoop, defaults: [String: String] = [:], sessionFile: String? = nil,
                onShutdown: @escaping @Sendable () -> Void) throws {
        self.eventLoop = eventLoop
        self.defaults = defaults
        self.sessionFile = sessionFile
        self.queue = queue
        self.root = DownloadRoot(root)
        base = options
        self.onShutdown = onShutdown
        lock = try StateDirectoryLock(directory: stateDirectory)
        store = try QueueStore(path: stateDirectory + "/queue.sqlite")
        globalOptions = defaults.merging(["dir": self.root.path, "max-concurrent-downloads": String(queue.maximumActive)]) { $1 }
    }

    /// Adds a download as `aria2.addUri` would (an input file's entries at start).
    public func add(uris: [String], options: [String: String]) throws {
        do throws(RPCFailure) {
            _ = try add(uris: uris, options: options, position: nil)
            writeSessionFile()
        } catch {
            throw error
        }
    }

    static let methods = [
        "aria2.addUri", "aria2.addTorrent", "aria2.addMetalink", "aria2.remove", "aria2.forceRemove", "aria2.pause",
        "aria2.forcePause", "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll", "aria2.tellStatus",
        "aria2.getUris", "aria2.getFiles", "aria2.getPeers", "aria2.getServers", "aria2.tellActive", "aria2.tellWaiting",
        "aria2.tellStopped", "aria2.changePosition", "aria2.changeUri", "aria2.getOption", "aria2.changeOption",
        "aria2.getGlobalOption", "aria2.changeGlobalOption", "aria2.getGlobalStat", "aria2.purgeDownloadResult",
        "aria2.removeDownloadResult", "aria2.getVersion", "aria2.getSessionInfo", "aria2.shutdown", "aria2.forceShutdown",
        "aria2.saveSession", "system.multicall", "system.listMethods", "system.listNotifications",
    ]

    static let notifications = [
        "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete",
        "aria2.onDownloadError", "aria2.onBtDownloadComplete",
    ]

    /// The methods after which aria2c's `--save-session` file is written again.
    static let queueChanges: Set<String> = [
        "aria2.addUri", "aria2.addMetalink", "aria2.remove", "aria2.forceRemove", "aria2.pause", "aria2.forcePause",
        "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll", "aria2.changePosition", "aria2.changeUri",
        "aria2.changeOption",
    ]

    /// The methods answered only once downloads have stopped; every other one is answered at
    /// once (``callAtOnce(_:_:)``).
    static let waitingMethods: Set<String> = [
        "aria2.remove", "aria2.forceRemove", "aria2.pause", "aria2.forcePause", "aria2.pauseAll", "aria2.forcePauseAll",
    ]

    /// `method` is answered without waiting for anything (`system.multicall` may hold a waiting one).
    static func answersAtOnce(_ method: String) -> Bool {
        !waitingMethods.contains(method) && method != "system.multicall"
    }

    /// Answers one call whose token has been checked (and taken off `params`).
    func call(_ method: String, _ params: [JSON]) async throws(RPCFailure) -> JSON {
        guard Self.waitingMethods.contains(method) else { return try callAtOnce(method, params) }
        let arguments = Aria2Arguments(method: method, params: params)
        let result: JSON = switch method {
        case "aria2.remove", "aria2.forceRemove": .string(try await remove(arguments.string(0)))
        case "aria2.pause", "aria2.forcePause": .string(try await pause(arguments.string(0)))
        default: await pauseAll()
        }
        writeSessionFile()
        return result
    }

    /// Answers one call that needs no waiting (``answersAtOnce(_:)``), its token checked.
    func callAtOnce(_ method: String, _ params: [JSON]) throws(RPCFailure) -> JSON {
        let result = try answer(method, params)
        if Self.queueChanges.contains(method) { writeSessionFile() }
        return result
    }

    private func answer(_ method: String, _ params: [JSON]) throws(RPCFailure) -> JSON {
        let arguments = Aria2Arguments(method: method, params: params)
        switch method {
        case "aria2.addUri": return .string(try add(uris: arguments.strings(0), options: arguments.options(1), position: arguments.integer(2)))
        case "aria2.addMetalink": return try addMetalink(arguments)
        case "aria2.addTorrent": throw RPCFailure("BitTorrent is not supported by rangefetch (HTTP, HTTPS, S3 and metalinks are)")
        case "aria2.unpause": return .string(try unpause(arguments.string(0)))
        case "aria2.unpauseAll": return unpauseAll()
        case "aria2.tellStatus": return try status(record(arguments.string(0)), keys: arguments.keys(1))
        case "aria2.getUris": return try uris(record(arguments.string(0)))
        case "aria2.getFiles": return try files(record(arguments.string(0)))
        case "aria2.getPeers": _ = try record(arguments.string(0)); return .array([])
        case "aria2.getServers": return try servers(record(arguments.string(0)))
        case "aria2.purgeDownloadResult": purge(stopped); return .string("OK")
        case "aria2.tellActive": return list(queue.ids(.active).compactMap { gids[$0] }, keys: try arguments.keys(0))
        case "aria2.tellWaiting":
            return try page(waiting.compactMap { gids[$0] }, offset: arguments.integer(0) ?? 0, count: arguments.integer(1) ?? 0, keys: arguments.keys(2))
        case "aria2.tellStopped": return try page(stopped, offset: arguments.integer(0) ?? 0, count: arguments.integer(1) ?? 0, keys: arguments.keys(2))
        case "aria2.changePosition": return try changePosition(arguments)
        case "aria2.changeUri": return try changeURIs(arguments)
        case "aria2.getOption": return try options(of: record(arguments.string(0)))
        case "aria2.changeOption": return try changeOption(arguments)
        case "aria2.getGlobalOption": return globalOptions.mapValues(JSON.string).json
        case "aria2.changeGlobalOption": return try changeGlobalOption(arguments.options(0))
        case "aria2.getGlobalStat": return globalStat()
        case "aria2.removeDownloadResult": return try removeResult(arguments.string(0))
        case "aria2.getVersion":
            return ["version": .string("1.37.0"), "enabledFeatures": .array(["Async DNS", "GZip", "HTTPS", "Metalink"].map(JSON.string))].json
        case "aria2.getSessionInfo": return ["sessionId": .string(sessionID)].json
        case "aria2.saveSession": return try saveSession()
        case "aria2.shutdown", "aria2.forceShutdown":
            onShutdown()
            return .string("OK")
        case "system.listMethods": return Self.methods.map(JSON.string).json
        case "system.listNotifications": return Self.notifications.map(JSON.string).json
        default: throw RPCFailure("No such method: \(method)")
        }
    }

    // MARK: Adding

    func add(uris: [String], options given: [String: String], position: Int?) throws(RPCFailure) -> String {
        guard let main = uris.first else { throw RPCFailure("addUri needs at least one URI") }
        if uris.contains(where: { $0.lowercased().hasPrefix("magnet:") }) {
            throw RPCFailure("magnet URIs are BitTorrent, which rangefetch does not support (HTTP, HTTPS, S3 and metalinks are)")
        }
        let given = defaults.merging(given) { $1 }
        var options = try downloadOptions(given)
        options.mirrors = Array(uris.dropFirst())
        return try enqueue(main, uris: uris, options: options, given: given, position: position)
    }

    func addMetalink(_ arguments: Aria2Arguments) throws(RPCFailure) -> JSON {
        let text = try arguments.string(0)
        let given = try arguments.options(1)
        let (metalink, main, options) = try metalinkDownload(text, given: given)
        let gid = try enqueue(main, uris: metalink.locations.map(\.url), options: options,
                              given: given.merging([Self.metalinkOption: text]) { $1 }, position: try arguments.integer(2))
        return .array([.string(gid)])
    }

    /// The download a base64 metalink describes, with `given` options (its name unless `out`).
    func metalinkDownload(_ text: String, given: [String: String]) throws(RPCFailure) -> (Metalink, String, DownloadOptions) {
        guard let bytes = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
            throw RPCFailure("addMetalink takes the metalink document in base64")
        }
        let metalink: Metalink
        do {
            metalink = try Metalink.parse(Array(bytes), origin: "the metalink")
        } catch {
            throw RPCFailure(error.message)
        }
        var options = try downloadOptions(given.merging(["out": given["out"] ?? metalink.name]) { $1 })
        let main = metalink.apply(to: &options)
        return (metalink, main, options)
    }

    func enqueue(_ url: String, uris: [String], options: DownloadOptions, given: [String: String],
                         position: Int?) throws(RPCFailure) -> String {
        let gid = try newGID(given["gid"])
        let place = position.map { waitingPosition($0) }
        let directory: String = switch options.destination {
        case .file(let path): String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        case .directory(let directory): directory
        case .standardOutput: root.path
        }
        let paused = given["pause"] == "true"
        let kept = given.filter { $0.key != "gid" }
        // On disk first: a download is never running that a restart would not know of.
        try saving { () throws(QueueStore.Failure) in
            try store.save(QueueStore.Row(gid: gid, position: store.endPosition(), uris: uris, options: kept, directory: directory,
                                          status: paused ? "paused" : "waiting"))
        }
        let id: DownloadID
        let control = SpeedControl(bytesPerSecond: speedLimit(kept))
        var options = options
        options.request.speedControl = control
        do {
            id = try queue.add(url, options: options, paused: paused, at: place)
        } catch {
            try? store.delete([gid])
            throw RPCFailure(error.message)
        }
        records[gid] = Record(gid: gid, id: id, uris: uris, directory: directory, options: kept, control: control)
        gids[id] = gid
        if place != nil { try saveOrder() }
        return gid
    }

    /// The download options an addUri's `options` ask for, inside the download root.
    func downloadOptions(_ given: [String: String]) throws(RPCFailure) -> DownloadOptions {
        var options = base
        let place = try root.place(dir: given["dir"], out: given["out"])
        options.destination = place.name.map { .file(place.directory + "/" + $0) } ?? .directory(place.directory)
        if place.name != nil { options.followsLinkAtOutputPath = false }
        if let count = (given["split"] ?? given["max-connection-per-server"]).flatMap(Int.init) {
            guard (1...64).contains(count) else { throw RPCFailure("split must be 1-64 (got \(count))") }
            options.connections = .fixed(count)
        }
        // Checked here; applied through the download's SpeedControl, live (``speedLimit(_:)``).
        _ = try Self.speed(given["max-download-limit"], option: "max-download-limit")
        if let checksum = given["checksum"] {
            do {
                options.checksums.append(try ChecksumSpec.parse(checksum))
            } catch {
                throw RPCFailure(error.message)
            }
        }
        if let headers = given["header"] { options.request.headers += headers.split(separator: "\n").map(String.init) }
        return options
    }

    func newGID(_ given: String?) throws(RPCFailure) -> String {
        if let given {
            guard given.count == 16, given.allSatisfy(\.isHexDigit) else { throw RPCFailure("gid '\(given)' must be 16 hex digits") }
            let gid = given.lowercased()
            guard records[gid] == nil else { throw RPCFailure("GID \(gid) is not unique") }
            return gid
        }
        while true {
            let gid = Self.randomHex(16)
            if records[gid] == nil { return gid }
        }
    }

    static func randomHex(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        return String((0..<count).map { _ in digits[Int(generator.next() % 16)] })
    }
}

extension Dictionary where Key == String, Value == JSON {
    var json: JSON { .object(self) }
}

extension Array where Element == JSON {
    var json: JSON { .array(self) }
}
