import FoundationEssentials
import RangeFetch

/// aria2's RPC methods on a ``DownloadQueue``: what `aria2.addUri`, `aria2.tellStatus` and the
/// rest mean here, with aria2's result shapes (every number a string, GIDs of 16 hex digits, a
/// unique prefix accepted). A pause or removal is answered once the download has stopped: no
/// byte of it arrives after the answer.
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
    private let base: DownloadOptions
    private var records: [String: Record] = [:]
    private var gids: [DownloadID: String] = [:]
    /// GIDs that stopped (complete, error, removed), oldest first.
    private var stopped: [String] = []
    private var globalOptions: [String: String] = [:]
    /// Options every added download starts with (aria2's global options that apply to
    /// downloads: `pause`, `max-download-limit`, `split`…); its own options win.
    private var defaults: [String: String]
    private let sessionID = Aria2Service.randomHex(40)
    /// The queue on disk: every accepted change is committed there before it is answered.
    private let store: QueueStore
    /// Called once `aria2.shutdown` has been answered.
    private let onShutdown: @Sendable () -> Void

    /// A service adding downloads under `root` with `options`.
    /// The queue is kept in `stateDirectory/queue.sqlite` (``restore()`` reads it back).
    public init(queue: DownloadQueue, root: String, options: DownloadOptions, stateDirectory: String,
                defaults: [String: String] = [:], onShutdown: @escaping @Sendable () -> Void) throws {
        self.defaults = defaults
        self.queue = queue
        self.root = DownloadRoot(root)
        base = options
        self.onShutdown = onShutdown
        store = try QueueStore(path: stateDirectory + "/queue.sqlite")
        globalOptions = defaults.merging(["dir": self.root.path, "max-concurrent-downloads": String(queue.maximumActive)]) { $1 }
    }

    /// Adds a download as `aria2.addUri` would (an input file's entries at start).
    public func add(uris: [String], options: [String: String]) throws {
        do throws(RPCFailure) {
            _ = try add(uris: uris, options: options, position: nil)
        } catch {
            throw error
        }
    }

    /// Reads the queue back as the last run left it: stopped downloads are listed (no request
    /// made), paused ones stay paused, and the others wait their turn, resuming from their
    /// journals. The events of the queue must be followed (``follow(_:)``) from before this.
    public func restore() throws {
        if let count = try store.setting("max-concurrent-downloads").flatMap(Int.init) {
            queue.maximumActive = count
            globalOptions["max-concurrent-downloads"] = String(count)
        }
        for row in try store.load() {
            var record = Record(gid: row.gid, id: nil, uris: row.uris, directory: row.directory, options: row.options)
            switch row.status {
            case "complete", "error", "removed":
                record.ended = Ended(status: row.status, path: row.path, length: row.length, error: row.error)
                record.removed = row.status == "removed"
                stopped.append(row.gid)
            default:
                do {
                    let (url, options) = try downloadOptions(for: row)
                    record.id = try queue.add(url, options: options, paused: row.status == "paused")
                } catch {
                    record.ended = Ended(status: "error", error: "not added again after a restart: \(error)")
                    stopped.append(row.gid)
                }
            }
            records[row.gid] = record
            if let id = record.id { gids[id] = row.gid }
        }
    }

    /// The URL and options a stored row asks for.
    private func downloadOptions(for row: QueueStore.Row) throws(RPCFailure) -> (String, DownloadOptions) {
        if let text = row.options[Self.metalinkOption] {
            let (_, url, options) = try metalinkDownload(text, given: row.options.filter { $0.key != Self.metalinkOption })
            return (url, options)
        }
        guard let main = row.uris.first else { throw RPCFailure("no URI") }
        var options = try downloadOptions(row.options)
        options.mirrors = Array(row.uris.dropFirst())
        return (main, options)
    }

    /// Follows the queue's events (`events`, from ``DownloadQueue/events()`` taken before
    /// anything was added): downloads that end join the stopped list, in the store too.
    public func follow(_ events: AsyncStream<QueueEvent>) async {
        for await event in events {
            switch event {
            case .completed(let id, let summary): noteStopped(id, Ended(status: "complete", path: summary.path, length: summary.bytes))
            case .failed(let id, let error): noteStopped(id, Ended(status: "error", error: error.message))
            default: break
            }
        }
    }

    private func noteStopped(_ id: DownloadID, _ ended: Ended) {
        guard let gid = gids[id], !stopped.contains(gid) else { return }
        stopped.append(gid)
        try? store.setStatus(gid, ended.status, path: ended.path, length: ended.length, error: ended.error)
    }

    /// Runs a store change; a failure fails the call (nothing is claimed that is not on disk).
    private func saving(_ change: () throws(QueueStore.Failure) -> Void) throws(RPCFailure) {
        do {
            try change()
        } catch {
            throw RPCFailure("the queue could not be saved: \(error.description)")
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

    /// Answers one call whose token has been checked (and taken off `params`).
    func call(_ method: String, _ params: [JSON]) async throws(RPCFailure) -> JSON {
        let arguments = Aria2Arguments(method: method, params: params)
        switch method {
        case "aria2.addUri": return .string(try add(uris: arguments.strings(0), options: arguments.options(1), position: arguments.integer(2)))
        case "aria2.addMetalink": return try addMetalink(arguments)
        case "aria2.addTorrent": throw RPCFailure("BitTorrent is not supported by rangefetch (HTTP, HTTPS, S3 and metalinks are)")
        case "aria2.remove", "aria2.forceRemove": return .string(try await remove(arguments.string(0)))
        case "aria2.pause", "aria2.forcePause": return .string(try await pause(arguments.string(0)))
        case "aria2.pauseAll", "aria2.forcePauseAll": return try await pauseAll()
        case "aria2.unpause": return .string(try unpause(arguments.string(0)))
        case "aria2.unpauseAll": return unpauseAll()
        case "aria2.tellStatus": return try status(record(arguments.string(0)), keys: arguments.keys(1))
        case "aria2.getUris": return try uris(record(arguments.string(0)))
        case "aria2.getFiles": return try files(record(arguments.string(0)))
        case "aria2.getPeers": _ = try record(arguments.string(0)); return .array([])
        case "aria2.getServers": return try servers(record(arguments.string(0)))
        case "aria2.purgeDownloadResult": purge(stopped); return .string("OK")
        case "aria2.tellActive": return list(queue.entries.filter { $0.status == .active }.compactMap { gids[$0.id] }, keys: try arguments.keys(0))
        case "aria2.tellWaiting":
            return try page(waiting.compactMap { gids[$0] }, offset: arguments.integer(0) ?? 0, count: arguments.integer(1) ?? 0, keys: arguments.keys(2))
        case "aria2.tellStopped": return try page(stopped, offset: arguments.integer(0) ?? 0, count: arguments.integer(1) ?? 0, keys: arguments.keys(2))
        case "aria2.changePosition": return try changePosition(arguments)
        case "aria2.changeUri": throw RPCFailure("changeUri is not supported yet: remove the download and add it with the new URIs")
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

    private func add(uris: [String], options given: [String: String], position: Int?) throws(RPCFailure) -> String {
        guard let main = uris.first else { throw RPCFailure("addUri needs at least one URI") }
        let given = defaults.merging(given) { $1 }
        var options = try downloadOptions(given)
        options.mirrors = Array(uris.dropFirst())
        return try enqueue(main, uris: uris, options: options, given: given, position: position)
    }

    private func addMetalink(_ arguments: Aria2Arguments) throws(RPCFailure) -> JSON {
        let text = try arguments.string(0)
        let given = try arguments.options(1)
        let (metalink, main, options) = try metalinkDownload(text, given: given)
        let gid = try enqueue(main, uris: metalink.locations.map(\.url), options: options,
                              given: given.merging([Self.metalinkOption: text]) { $1 }, position: try arguments.integer(2))
        return .array([.string(gid)])
    }

    /// The download a base64 metalink describes, with `given` options (its name unless `out`).
    private func metalinkDownload(_ text: String, given: [String: String]) throws(RPCFailure) -> (Metalink, String, DownloadOptions) {
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

    private func enqueue(_ url: String, uris: [String], options: DownloadOptions, given: [String: String],
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
        do {
            id = try queue.add(url, options: options, paused: paused, at: place)
        } catch {
            try? store.delete([gid])
            throw RPCFailure(error.message)
        }
        records[gid] = Record(gid: gid, id: id, uris: uris, directory: directory, options: kept)
        gids[id] = gid
        if place != nil { try saveOrder() }
        return gid
    }

    /// The download options an addUri's `options` ask for, inside the download root.
    private func downloadOptions(_ given: [String: String]) throws(RPCFailure) -> DownloadOptions {
        var options = base
        let place = try root.place(dir: given["dir"], out: given["out"])
        options.destination = place.name.map { .file(place.directory + "/" + $0) } ?? .directory(place.directory)
        if place.name != nil { options.followsLinkAtOutputPath = false }
        if let count = (given["split"] ?? given["max-connection-per-server"]).flatMap(Int.init) {
            guard (1...64).contains(count) else { throw RPCFailure("split must be 1-64 (got \(count))") }
            options.connections = .fixed(count)
        }
        if let limit = given["max-download-limit"], limit != "0" {
            guard let bytes = ByteCount.parse(limit), bytes > 0 else { throw RPCFailure("max-download-limit '\(limit)' is not a speed (e.g. 1M)") }
            options.request.maximumBytesPerSecond = bytes
        }
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

    private func newGID(_ given: String?) throws(RPCFailure) -> String {
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

    // MARK: Control

    private func remove(_ text: String) async throws(RPCFailure) -> String {
        let record = try record(text)
        guard let id = record.id else { throw RPCFailure("Active Download not found for GID#\(record.gid)") }
        switch queue.status(id) {
        case .complete?, .failed?, nil: throw RPCFailure("Active Download not found for GID#\(record.gid)")
        default: break
        }
        try saving { () throws(QueueStore.Failure) in try store.setStatus(record.gid, "removed") }
        do {
            try queue.remove(id)
        } catch {
            throw RPCFailure(error.message)
        }
        records[record.gid]?.removed = true
        await settle(id) { $0 == nil }
        stopped.append(record.gid)
        return record.gid
    }

    private func pause(_ text: String) async throws(RPCFailure) -> String {
        let record = try record(text)
        guard let id = record.id, queue.status(id) == .active || queue.status(id) == .waiting else {
            throw RPCFailure("GID#\(record.gid) cannot be paused now")
        }
        try saving { () throws(QueueStore.Failure) in try store.setStatus(record.gid, "paused") }
        do {
            try queue.pause(id)
        } catch {
            throw RPCFailure("GID#\(record.gid) cannot be paused now")
        }
        await settle(id) { $0 != .active }
        return record.gid
    }

    private func pauseAll() async -> JSON {
        let running = queue.entries.filter { $0.status == .active || $0.status == .waiting }.map(\.id)
        for id in running {
            if let gid = gids[id] { try? store.setStatus(gid, "paused") }
            try? queue.pause(id)
        }
        for id in running { await settle(id) { $0 != .active } }
        return .string("OK")
    }

    private func unpause(_ text: String) throws(RPCFailure) -> String {
        let record = try record(text)
        guard let id = record.id, queue.status(id) == .paused else { throw RPCFailure("GID#\(record.gid) cannot be unpaused now") }
        try saving { () throws(QueueStore.Failure) in try store.setStatus(record.gid, "waiting") }
        do {
            try queue.resume(id)
        } catch {
            throw RPCFailure(error.message)
        }
        return record.gid
    }

    private func unpauseAll() -> JSON {
        for entry in queue.entries where entry.status == .paused {
            if let gid = gids[entry.id] { try? store.setStatus(gid, "waiting") }
            try? queue.resume(entry.id)
        }
        return .string("OK")
    }

    /// Waits (10 s at most) until `id`'s status satisfies `done`.
    private func settle(_ id: DownloadID, until done: (QueueStatus?) -> Bool) async {
        for _ in 0..<1000 where !done(queue.status(id)) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private func changePosition(_ arguments: Aria2Arguments) throws(RPCFailure) -> JSON {
        let record = try record(arguments.string(0))
        let offset = try arguments.integer(1) ?? 0
        let list = waiting
        guard let id = record.id, let current = list.firstIndex(of: id) else { throw RPCFailure("GID#\(record.gid) is not waiting") }
        let target: Int
        switch try arguments.string(2) {
        case "POS_SET": target = offset
        case "POS_CUR": target = current + offset
        case "POS_END": target = list.count - 1 + offset
        case let how: throw RPCFailure("how must be POS_SET, POS_CUR or POS_END (got \(how))")
        }
        let clamped = min(max(0, target), list.count - 1)
        do {
            try queue.move(id, to: waitingPosition(clamped))
        } catch {
            throw RPCFailure(error.message)
        }
        try saveOrder()
        return .number(Double(clamped))
    }

    /// The queue's order, on disk.
    private func saveOrder() throws(RPCFailure) {
        let order = queue.entries.compactMap { gids[$0.id] }
        try saving { () throws(QueueStore.Failure) in try store.setOrder(order) }
    }

    /// The queue-order index of the waiting download now at `index` among the waiting ones.
    private func waitingPosition(_ index: Int) -> Int {
        let order = queue.entries.map(\.id)
        let list = waiting
        guard index >= 0, index < list.count else { return order.count }
        return order.firstIndex(of: list[index]) ?? order.count
    }

    // MARK: Options

    private func options(of record: Record) -> JSON {
        var options = record.options
        options["dir"] = record.directory
        return options.mapValues(JSON.string).json
    }

    private func changeOption(_ arguments: Aria2Arguments) throws(RPCFailure) -> JSON {
        let record = try record(arguments.string(0))
        let changes = try arguments.options(1)
        guard changes["dir"] == nil, changes["out"] == nil else { throw RPCFailure("dir and out cannot be changed once added") }
        let merged = record.options.merging(changes) { $1 }
        guard let id = record.id else { throw RPCFailure("GID#\(record.gid) has stopped; its options cannot change") }
        let row = QueueStore.Row(gid: record.gid, position: 0, uris: record.uris, options: merged.merging(["dir": record.directory]) { $1 },
                                 directory: record.directory, status: "")
        let (_, options) = try downloadOptions(for: row)
        do {
            try queue.setOptions(options, for: id)
        } catch {
            throw RPCFailure(error.message)
        }
        try saving { () throws(QueueStore.Failure) in try store.setOptions(record.gid, merged) }
        records[record.gid]?.options = merged
        return .string("OK")
    }

    private func changeGlobalOption(_ changes: [String: String]) throws(RPCFailure) -> JSON {
        if let text = changes["max-concurrent-downloads"] {
            guard let count = Int(text), count >= 1 else { throw RPCFailure("max-concurrent-downloads must be a number of at least 1") }
            try saving { () throws(QueueStore.Failure) in try store.setSetting("max-concurrent-downloads", String(count)) }
            queue.maximumActive = count
        }
        guard changes["dir"] == nil else { throw RPCFailure("dir is the daemon's download root; restart it with --dir to change it") }
        globalOptions.merge(changes) { $1 }
        for (key, value) in changes where Aria2Flags.downloadOptions.contains(key) { defaults[key] = value }
        return .string("OK")
    }

    // MARK: Status

    private var waiting: [DownloadID] {
        queue.entries.filter { $0.status == .waiting || $0.status == .paused }.map(\.id)
    }

    private var stoppedGIDs: [String] { stopped }

    private func record(_ text: String) throws(RPCFailure) -> Record {
        let key = text.lowercased()
        guard !key.isEmpty, key.count <= 16, key.allSatisfy(\.isHexDigit) else { throw RPCFailure("Invalid GID \(text)") }
        if let record = records[key] { return record }
        let matches = key.isEmpty ? [] : records.keys.filter { $0.hasPrefix(key) }
        guard matches.count == 1, let record = records[matches[0]] else {
            throw RPCFailure(matches.isEmpty ? "GID \(text) is not found" : "GID \(text) is ambiguous")
        }
        return record
    }

    private func list(_ list: [String], keys: [String]?) -> JSON {
        .array(list.compactMap { records[$0] }.map { status($0, keys: keys) })
    }

    /// aria2's paging: `offset` from the start, or from the end when negative (then in reverse).
    private func page(_ all: [String], offset: Int, count: Int, keys: [String]?) -> JSON {
        guard count > 0, !all.isEmpty else { return .array([]) }
        if offset >= 0 {
            return list(Array(all.dropFirst(offset).prefix(count)), keys: keys)
        }
        let start = all.count + offset
        guard start >= 0 else { return .array([]) }
        return list(Array(all[max(0, start - count + 1)...start].reversed()), keys: keys)
    }

    private func status(_ record: Record, keys: [String]?) -> JSON {
        let entry = record.id.flatMap { id in queue.entries.first { $0.id == id } }
        let ended = record.ended
        var fields: [String: JSON] = [
            "gid": .string(record.gid),
            "status": .string(record.removed ? "removed" : ended?.status ?? Self.statusName(entry?.status)),
            "totalLength": .count(entry?.totalBytes ?? ended?.length ?? 0),
            "completedLength": .count(entry?.receivedBytes ?? (ended?.status == "complete" ? ended?.length ?? 0 : 0)),
            "uploadLength": .string("0"),
            "downloadSpeed": .count(Int64(entry?.bytesPerSecond ?? 0)),
            "uploadSpeed": .string("0"),
            "connections": .count(entry?.connections ?? 0),
            "dir": .string(record.directory),
            "files": files(record, entry: entry),
        ]
        if let error = entry?.error {
            fields["errorCode"] = .string(error.category == .checksum ? "32" : "1")
            fields["errorMessage"] = .string(error.message)
        } else if let message = ended?.error {
            fields["errorCode"] = .string("1")
            fields["errorMessage"] = .string(message)
        }
        guard let keys, !keys.isEmpty else { return .object(fields) }
        return .object(fields.filter { keys.contains($0.key) })
    }

    static func statusName(_ status: QueueStatus?) -> String {
        switch status {
        case .waiting?: "waiting"
        case .active?: "active"
        case .paused?: "paused"
        case .complete?: "complete"
        case .failed?: "error"
        case nil: "removed"
        }
    }

    private func files(_ record: Record, entry: QueueEntry? = nil) -> JSON {
        let entry = entry ?? record.id.flatMap { id in queue.entries.first { $0.id == id } }
        let path = entry?.path ?? record.ended?.path ?? record.options["out"].map { record.directory + "/" + $0 } ?? ""
        let length = entry?.totalBytes ?? record.ended?.length ?? 0
        let completed = entry?.receivedBytes ?? (record.ended?.status == "complete" ? length : 0)
        return .array([[
            "index": .string("1"), "path": .string(path), "length": .count(length),
            "completedLength": .count(completed), "selected": .string("true"),
            "uris": uris(record),
        ].json])
    }

    /// aria2's URI status: `used` while the download runs, `waiting` otherwise.
    static func uri(_ text: String, used: Bool) -> JSON { ["uri": .string(text), "status": .string(used ? "used" : "waiting")].json }

    private func isActive(_ record: Record) -> Bool { record.id.map { queue.status($0) == .active } ?? false }

    private func uris(_ record: Record) -> JSON {
        record.uris.map { Self.uri($0, used: isActive(record)) }.json
    }

    /// The servers of a running download: its URIs with the download's speed (one file).
    private func servers(_ record: Record) -> JSON {
        guard isActive(record), let id = record.id, let entry = queue.entries.first(where: { $0.id == id }) else { return .array([]) }
        let servers = record.uris.map { uri in
            ["uri": .string(uri), "currentUri": .string(uri), "downloadSpeed": .count(Int64(entry.bytesPerSecond))].json
        }
        return [["index": .string("1"), "servers": .array(servers)].json].json
    }

    /// Writes the unfinished downloads in aria2's session format to the `save-session` global
    /// option's file, which must be under the download root.
    private func saveSession() throws(RPCFailure) -> JSON {
        guard let target = globalOptions["save-session"], !target.isEmpty else { return .string("OK") }
        let place = try root.place(dir: nil, out: target.hasPrefix("/") && DownloadRoot.contains(root.path, target)
                                   ? String(target.dropFirst(root.path.count + 1)) : target)
        guard let name = place.name else { throw RPCFailure("save-session must name a file") }
        var text = ""
        for entry in queue.entries where entry.status != .complete {
            guard let gid = gids[entry.id], let record = records[gid] else { continue }
            text += record.uris.joined(separator: "\t") + "\n gid=\(gid)\n"
            if entry.status == .paused { text += " pause=true\n" }
            for (key, value) in record.options.sorted(by: { $0.key < $1.key }) where key != "pause" && key != Self.metalinkOption {
                text += " \(key)=\(value)\n"
            }
        }
        let path = place.directory + "/" + name
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw RPCFailure("the session could not be saved to \(path): \(error)")
        }
        return .string("OK")
    }

    private func globalStat() -> JSON {
        let entries = queue.entries
        let active = entries.filter { $0.status == .active }
        return [
            "downloadSpeed": .count(Int64(active.reduce(0) { $0 + $1.bytesPerSecond })),
            "uploadSpeed": .string("0"),
            "numActive": .count(active.count),
            "numWaiting": .count(entries.filter { $0.status == .waiting || $0.status == .paused }.count),
            "numStopped": .count(stopped.count),
            "numStoppedTotal": .count(stopped.count),
        ].json
    }

    private func removeResult(_ text: String) throws(RPCFailure) -> JSON {
        let record = try record(text)
        guard stopped.contains(record.gid) else { throw RPCFailure("Could not remove download result of GID#\(record.gid)") }
        purge([record.gid])
        return .string("OK")
    }

    /// Forgets stopped downloads (their files stay).
    private func purge(_ list: [String]) {
        try? store.delete(list)
        for gid in list {
            guard let record = records.removeValue(forKey: gid) else { continue }
            if let id = record.id {
                gids[id] = nil
                try? queue.remove(id, keepingFiles: true)
            }
        }
        stopped.removeAll { list.contains($0) }
    }
}

extension Dictionary where Key == String, Value == JSON {
    var json: JSON { .object(self) }
}

extension Array where Element == JSON {
    var json: JSON { .array(self) }
}
