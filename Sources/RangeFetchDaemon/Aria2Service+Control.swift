import FoundationEssentials
import RangeFetch

/// aria2's control and option methods: pause, remove, reorder, options; each change is on
/// disk before it is answered.
extension Aria2Service {
    func remove(_ text: String) async throws(RPCFailure) -> String {
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

    func pause(_ text: String) async throws(RPCFailure) -> String {
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

    func pauseAll() async -> JSON {
        let running = queue.entries.filter { $0.status == .active || $0.status == .waiting }.map(\.id)
        for id in running {
            if let gid = gids[id] { try? store.setStatus(gid, "paused") }
            try? queue.pause(id)
        }
        for id in running { await settle(id) { $0 != .active } }
        return .string("OK")
    }

    func unpause(_ text: String) throws(RPCFailure) -> String {
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

    func unpauseAll() -> JSON {
        for entry in queue.entries where entry.status == .paused {
            if let gid = gids[entry.id] { try? store.setStatus(gid, "waiting") }
            try? queue.resume(entry.id)
        }
        return .string("OK")
    }

    /// Waits (10 s at most) until `id`'s status satisfies `done`.
    func settle(_ id: DownloadID, until done: (QueueStatus?) -> Bool) async {
        for _ in 0..<1000 where !done(queue.status(id)) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    func changePosition(_ arguments: Aria2Arguments) throws(RPCFailure) -> JSON {
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
    func saveOrder() throws(RPCFailure) {
        let order = queue.entries.compactMap { gids[$0.id] }
        try saving { () throws(QueueStore.Failure) in try store.setOrder(order) }
    }

    /// The queue-order index of the waiting download now at `index` among the waiting ones.
    func waitingPosition(_ index: Int) -> Int {
        let order = queue.entries.map(\.id)
        let list = waiting
        guard index >= 0, index < list.count else { return order.count }
        return order.firstIndex(of: list[index]) ?? order.count
    }

    func options(of record: Record) -> JSON {
        var options = record.options
        options["dir"] = record.directory
        return options.mapValues(JSON.string).json
    }

    func changeOption(_ arguments: Aria2Arguments) throws(RPCFailure) -> JSON {
        let record = try record(arguments.string(0))
        let changes = try arguments.options(1)
        guard changes["dir"] == nil, changes["out"] == nil else { throw RPCFailure("dir and out cannot be changed once added") }
        let merged = record.options.merging(changes) { $1 }
        guard let id = record.id else { throw RPCFailure("GID#\(record.gid) has stopped; its options cannot change") }
        let row = QueueStore.Row(gid: record.gid, position: 0, uris: record.uris, options: merged.merging(["dir": record.directory]) { $1 },
                                 directory: record.directory, status: "")
        var (_, options) = try downloadOptions(for: row)
        options.request.speedControl = record.control
        do {
            try queue.setOptions(options, for: id)
        } catch {
            throw RPCFailure(error.message)
        }
        try saving { () throws(QueueStore.Failure) in try store.setOptions(record.gid, merged) }
        records[record.gid]?.options = merged
        // The speed cap changes now, running or not; the other options from the next start.
        shareOverallLimit(changed: record.gid)
        return .string("OK")
    }

    /// `changeUri(gid, fileIndex, delUris, addUris[, position])`: `[deleted, added]` as plain
    /// numbers, as aria2 answers. The new list applies from the download's next start (a
    /// running one goes on with what it has, as a changed option does).
    func changeURIs(_ arguments: Aria2Arguments) throws(RPCFailure) -> JSON {
        let record = try record(arguments.string(0))
        guard try arguments.integer(1) == 1 else { throw RPCFailure("changeUri: GID#\(record.gid) has one file; its index is 1") }
        guard record.options[Self.metalinkOption] == nil else {
            throw RPCFailure("changeUri: GID#\(record.gid) comes from a metalink, whose URIs cannot be changed")
        }
        guard let id = record.id, queue.status(id) != .complete, queue.status(id) != .failed else {
            throw RPCFailure("changeUri: GID#\(record.gid) has stopped; its URIs cannot change")
        }
        let edit: URIListEdit
        do {
            edit = try URIListEdit(record.uris, delete: arguments.strings(2), add: arguments.strings(3), position: arguments.integer(4))
        } catch {
            throw RPCFailure("changeUri: GID#\(record.gid) would be left with no URI")
        }
        let row = QueueStore.Row(gid: record.gid, position: 0, uris: edit.uris,
                                 options: record.options.merging(["dir": record.directory]) { $1 }, directory: record.directory, status: "")
        var (main, options) = try downloadOptions(for: row)
        options.request.speedControl = record.control
        do {
            try queue.setOptions(options, for: id, url: main)
        } catch {
            throw RPCFailure(error.message)
        }
        try saving { () throws(QueueStore.Failure) in try store.setURIs(record.gid, edit.uris) }
        records[record.gid]?.uris = edit.uris
        return .array([.number(Double(edit.deleted)), .number(Double(edit.added))])
    }

    func changeGlobalOption(_ changes: [String: String]) throws(RPCFailure) -> JSON {
        if let text = changes["max-concurrent-downloads"] {
            guard let count = Int(text), count >= 1 else { throw RPCFailure("max-concurrent-downloads must be a number of at least 1") }
            try saving { () throws(QueueStore.Failure) in try store.setSetting("max-concurrent-downloads", String(count)) }
            queue.maximumActive = count
        }
        guard changes["dir"] == nil else { throw RPCFailure("dir is the daemon's download root; restart it with --dir to change it") }
        _ = try Self.speed(changes["max-overall-download-limit"], option: "max-overall-download-limit")
        _ = try Self.speed(changes["max-download-limit"], option: "max-download-limit")
        globalOptions.merge(changes) { $1 }
        for (key, value) in changes where Aria2Flags.downloadOptions.contains(key) { defaults[key] = value }
        if changes["max-overall-download-limit"] != nil { shareOverallLimit() }
        return .string("OK")
    }

    func removeResult(_ text: String) throws(RPCFailure) -> JSON {
        let record = try record(text)
        guard stopped.contains(record.gid) else { throw RPCFailure("Could not remove download result of GID#\(record.gid)") }
        purge([record.gid])
        return .string("OK")
    }

    /// Forgets stopped downloads (their files stay).
    func purge(_ list: [String]) {
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

// MARK: Speed limits, live

extension Aria2Service {
    /// aria2's speed text (`1M`, `500K`, `2048`); `nil` or `0`: no cap.
    static func speed(_ text: String?, option: String) throws(RPCFailure) -> Int64? {
        guard let text, text != "0" else { return nil }
        guard let bytes = ByteCount.parse(text), bytes > 0 else { throw RPCFailure("\(option) '\(text)' is not a speed (e.g. 1M)") }
        return bytes
    }

    /// A download's own `max-download-limit` (checked when it was given), else the daemon's
    /// `--max-speed` for every download.
    func speedLimit(_ options: [String: String]) -> Int64? {
        ((try? Self.speed(options["max-download-limit"], option: "max-download-limit")) ?? nil) ?? base.request.maximumBytesPerSecond
    }

    /// Sets each download's cap: its own limit, or an equal share of `max-overall-download-limit`
    /// among the running downloads when lower. Without an overall limit only `changed` (a
    /// download whose own limit changed) is touched; with one, every running download is, at
    /// each start and end (O(downloads in the queue)).
    func shareOverallLimit(changed gid: String? = nil) {
        let overall = (try? Self.speed(globalOptions["max-overall-download-limit"], option: "")) ?? nil
        if let gid, let record = records[gid] { record.control.bytesPerSecond = speedLimit(record.options) }
        guard overall != nil || overallLimitShared else { return }
        overallLimitShared = overall != nil
        let running = queue.entries.filter { $0.status == .active }.compactMap { gids[$0.id].flatMap { records[$0] } }
        let runningGIDs = Set(running.map(\.gid))
        for record in records.values where record.id != nil && !runningGIDs.contains(record.gid) {
            record.control.bytesPerSecond = speedLimit(record.options)
        }
        for record in running {
            let share = overall.map { $0 / Int64(running.count) }
            let own = speedLimit(record.options)
            record.control.bytesPerSecond = [own, share].compactMap { $0 }.min()
        }
    }
}
