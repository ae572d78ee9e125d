#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import RangeFetch

/// The queue across restarts (read back from the store, each end recorded) and the
/// notifications.
extension Aria2Service {
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
                    var (url, options) = try downloadOptions(for: row)
                    record.control.bytesPerSecond = speedLimit(row.options)
                    options.request.speedControl = record.control
                    record.id = try queue.add(url, options: options, paused: row.status == "paused")
                } catch {
                    record.ended = Ended(status: "error", error: "not added again after a restart: \(error)")
                    stopped.append(row.gid)
                }
            }
            records[row.gid] = record
            if let id = record.id { gids[id] = row.gid }
        }
        writeSessionFile()
    }

    /// The URL and options a stored row asks for.
    func downloadOptions(for row: QueueStore.Row) throws(RPCFailure) -> (String, DownloadOptions) {
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
            case .started(let id):
                shareOverallLimit()
                notify("aria2.onDownloadStart", id)
            case .paused(let id): notify("aria2.onDownloadPause", id)
            case .removed(let id): notify("aria2.onDownloadStop", id)
            case .completed(let id, let summary):
                noteStopped(id, Ended(status: "complete", path: summary.path, length: summary.bytes))
                writeSessionFile()
                notify("aria2.onDownloadComplete", id)
            case .failed(let id, let error):
                noteStopped(id, Ended(status: "error", error: error.message))
                writeSessionFile()
                notify("aria2.onDownloadError", id)
            default: break
            }
            switch event {
            case .paused, .removed, .completed, .failed, .requeued: shareOverallLimit()
            default: break
            }
        }
    }

    func notify(_ method: String, _ id: DownloadID) {
        guard let gid = gids[id] else { return }
        notifications.send(method, gid: gid)
    }

    func noteStopped(_ id: DownloadID, _ ended: Ended) {
        guard let gid = gids[id], !stopped.contains(gid) else { return }
        stopped.append(gid)
        try? store.setStatus(gid, ended.status, path: ended.path, length: ended.length, error: ended.error)
    }

    /// Runs a store change; a failure fails the call (nothing is claimed that is not on disk).
    func saving(_ change: () throws(QueueStore.Failure) -> Void) throws(RPCFailure) {
        do {
            try change()
        } catch {
            throw RPCFailure("the queue could not be saved: \(error.description)")
        }
    }

    /// Writes the unfinished downloads in aria2's session format to the `save-session` global
    /// option's file, which must be under the download root.
    func saveSession() throws(RPCFailure) -> JSON {
        guard let target = globalOptions["save-session"], !target.isEmpty else { return .string("OK") }
        let place = try root.place(dir: nil, out: target.hasPrefix("/") && DownloadRoot.contains(root.path, target)
                                   ? String(target.dropFirst(root.path.count + 1)) : target)
        guard let name = place.name else { throw RPCFailure("save-session must name a file") }
        let path = place.directory + "/" + name
        do {
            try Data(sessionText().utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw RPCFailure("the session could not be saved to \(path): \(error)")
        }
        return .string("OK")
    }

    /// The unfinished downloads in aria2's session format (what `--input-file` reads back).
    func sessionText() -> String {
        var text = ""
        for entry in queue.entries where entry.status != .complete {
            guard let gid = gids[entry.id], let record = records[gid] else { continue }
            text += record.uris.joined(separator: "\t") + "\n gid=\(gid)\n"
            if entry.status == .paused { text += " pause=true\n" }
            for (key, value) in record.options.sorted(by: { $0.key < $1.key }) where key != "pause" && key != Self.metalinkOption {
                text += " \(key)=\(value)\n"
            }
        }
        return text
    }

    /// Rewrites `--save-session`'s file (a temporary file renamed over it, so a reader never
    /// sees half of one). A failure is said on standard error once until a write succeeds again;
    /// the queue itself is in SQLite either way.
    func writeSessionFile() {
        guard let sessionFile else { return }
        do {
            try Data(sessionText().utf8).write(to: URL(fileURLWithPath: sessionFile), options: .atomic)
            sessionFileFailing = false
        } catch {
            guard !sessionFileFailing else { return }
            sessionFileFailing = true
            let line = Array("rangefetch: warning: --save-session \(sessionFile) could not be written: \(error)\n".utf8)
            _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }
}
