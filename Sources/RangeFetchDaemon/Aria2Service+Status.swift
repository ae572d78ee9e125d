import FoundationEssentials
import RangeFetch

/// aria2's status methods and result shapes: every number a string, GIDs by unique prefix.
extension Aria2Service {
    var waiting: [DownloadID] {
        queue.ids(.waiting, .paused)
    }

    var stoppedGIDs: [String] { stopped }

    func record(_ text: String) throws(RPCFailure) -> Record {
        let key = text.lowercased()
        guard !key.isEmpty, key.count <= 16, key.allSatisfy(\.isHexDigit) else { throw RPCFailure("Invalid GID \(text)") }
        if let record = records[key] { return record }
        let matches = key.isEmpty ? [] : records.keys.filter { $0.hasPrefix(key) }
        guard matches.count == 1, let record = records[matches[0]] else {
            throw RPCFailure(matches.isEmpty ? "GID \(text) is not found" : "GID \(text) is ambiguous")
        }
        return record
    }

    func list(_ list: [String], keys: [String]?) -> JSON {
        let wanted = StatusKeys(keys)
        let listed = list.compactMap { records[$0] }
        // One look at the queue for the whole page, not one per entry and URI: its lock is the
        // one every running download reports progress under.
        let entries = queue.entries(listed.compactMap(\.id))
        return .array(listed.map { status($0, keys: wanted, entry: $0.id.flatMap { entries[$0] }) })
    }

    /// aria2's paging: `offset` from the start, or from the end when negative (then in reverse).
    func page(_ all: [String], offset: Int, count: Int, keys: [String]?) -> JSON {
        guard count > 0, !all.isEmpty else { return .array([]) }
        if offset >= 0 {
            return list(Array(all.dropFirst(offset).prefix(count)), keys: keys)
        }
        let start = all.count + offset
        guard start >= 0 else { return .array([]) }
        return list(Array(all[max(0, start - count + 1)...start].reversed()), keys: keys)
    }

    /// The keys a status call asks for (all when none are named): only those are worked out.
    struct StatusKeys {
        private let wanted: Set<String>?

        init(_ keys: [String]?) {
            wanted = keys.flatMap { $0.isEmpty ? nil : Set($0) }
        }

        func contains(_ key: String) -> Bool { wanted?.contains(key) ?? true }
    }

    func status(_ record: Record, keys: [String]?) -> JSON {
        status(record, keys: StatusKeys(keys), entry: record.id.flatMap { queue.entry($0) })
    }

    /// `record`'s status, with its queue entry as it stands (`nil` once it left the queue).
    func status(_ record: Record, keys: StatusKeys, entry: QueueEntry?) -> JSON {
        let ended = record.ended
        var fields: [String: JSON] = [:]
        func put(_ key: String, _ value: @autoclosure () -> JSON) {
            if keys.contains(key) { fields[key] = value() }
        }
        put("gid", .string(record.gid))
        put("status", .string(record.removed ? "removed" : ended?.status ?? Self.statusName(entry?.status)))
        put("totalLength", .count(entry?.totalBytes ?? ended?.length ?? 0))
        put("completedLength", .count(entry?.receivedBytes ?? (ended?.status == "complete" ? ended?.length ?? 0 : 0)))
        put("uploadLength", .string("0"))
        put("downloadSpeed", .count(Int64(entry?.bytesPerSecond ?? 0)))
        put("uploadSpeed", .string("0"))
        put("connections", .count(entry?.connections ?? 0))
        put("dir", .string(record.directory))
        put("files", files(record, entry: entry))
        if let error = entry?.error {
            put("errorCode", .string(error.category == .checksum ? "32" : "1"))
            put("errorMessage", .string(error.message))
        } else if let message = ended?.error {
            put("errorCode", .string("1"))
            put("errorMessage", .string(message))
        }
        return .object(fields)
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

    func files(_ record: Record) -> JSON { files(record, entry: record.id.flatMap { queue.entry($0) }) }

    func files(_ record: Record, entry: QueueEntry?) -> JSON {
        let path = entry?.path ?? record.ended?.path ?? record.options["out"].map { record.directory + "/" + $0 } ?? ""
        let length = entry?.totalBytes ?? record.ended?.length ?? 0
        let completed = entry?.receivedBytes ?? (record.ended?.status == "complete" ? length : 0)
        return .array([[
            "index": .string("1"), "path": .string(path), "length": .count(length),
            "completedLength": .count(completed), "selected": .string("true"),
            "uris": uris(record, active: entry?.status == .active),
        ].json])
    }

    /// aria2's URI status: `used` while the download runs, `waiting` otherwise.
    static func uri(_ text: String, used: Bool) -> JSON { ["uri": .string(text), "status": .string(used ? "used" : "waiting")].json }

    func isActive(_ record: Record) -> Bool { record.id.map { queue.status($0) == .active } ?? false }

    func uris(_ record: Record) -> JSON { uris(record, active: isActive(record)) }

    func uris(_ record: Record, active: Bool) -> JSON {
        record.uris.map { Self.uri($0, used: active) }.json
    }

    /// The servers of a running download: its URIs with the download's speed (one file).
    func servers(_ record: Record) -> JSON {
        guard isActive(record), let id = record.id, let entry = queue.entry(id) else { return .array([]) }
        let servers = record.uris.map { uri in
            ["uri": .string(uri), "currentUri": .string(uri), "downloadSpeed": .count(Int64(entry.bytesPerSecond))].json
        }
        return [["index": .string("1"), "servers": .array(servers)].json].json
    }

    func globalStat() -> JSON {
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
}
