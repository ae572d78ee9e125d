import CSQLite
import FoundationEssentials

/// The daemon's queue on disk, in SQLite: one row per download (its GID, place, URIs, options,
/// status and, once it has stopped, its path, length or error) and the global options. Every
/// change is committed, and synced (WAL, `synchronous=FULL`), before the call that made it is
/// answered, so `kill -9` at any moment loses no accepted change. Used by one actor at a time.
final class QueueStore {
    struct Row: Sendable, Equatable {
        var gid: String
        var position: Int64
        var uris: [String]
        var options: [String: String]
        var directory: String
        /// aria2's name for it: waiting, paused, complete, error, removed (active is saved as
        /// waiting: after a restart it waits its turn and resumes from its journal).
        var status: String
        var path: String?
        var length: Int64?
        var error: String?
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private var database: OpaquePointer?
    let path: String

    init(path: String) throws(Failure) {
        self.path = path
        guard sqlite3_open_v2(path, &database, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, nil) == SQLITE_OK else {
            let message = database.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(database)
            throw Failure(description: "cannot open the queue \(path): \(message)")
        }
        sqlite3_busy_timeout(database, 5000)
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=FULL")
        try execute("""
            CREATE TABLE IF NOT EXISTS downloads (gid TEXT PRIMARY KEY, position INTEGER NOT NULL, uris TEXT NOT NULL,
                options TEXT NOT NULL, directory TEXT NOT NULL, status TEXT NOT NULL, path TEXT, length INTEGER, error TEXT)
            """)
        try execute("CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    }

    deinit { sqlite3_close(database) }

    /// Every row, in queue order.
    func load() throws(Failure) -> [Row] {
        var rows: [Row] = []
        try query("SELECT gid, position, uris, options, directory, status, path, length, error FROM downloads ORDER BY position") { statement in
            rows.append(Row(gid: Self.text(statement, 0) ?? "", position: sqlite3_column_int64(statement, 1),
                            uris: Self.decode([String].self, Self.text(statement, 2)) ?? [],
                            options: Self.decode([String: String].self, Self.text(statement, 3)) ?? [:],
                            directory: Self.text(statement, 4) ?? "", status: Self.text(statement, 5) ?? "waiting",
                            path: Self.text(statement, 6),
                            length: sqlite3_column_type(statement, 7) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, 7),
                            error: Self.text(statement, 8)))
        }
        return rows
    }

    /// The next position at the end of the queue.
    func endPosition() throws(Failure) -> Int64 {
        var position: Int64 = 0
        try query("SELECT COALESCE(MAX(position), 0) + 1 FROM downloads") { position = sqlite3_column_int64($0, 0) }
        return position
    }

    func save(_ row: Row) throws(Failure) {
        try run("INSERT OR REPLACE INTO downloads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [
            .text(row.gid), .integer(row.position), .text(Self.encode(row.uris)), .text(Self.encode(row.options)),
            .text(row.directory), .text(row.status), row.path.map(Value.text) ?? .null, row.length.map(Value.integer) ?? .null,
            row.error.map(Value.text) ?? .null,
        ])
    }

    func setStatus(_ gid: String, _ status: String, path: String? = nil, length: Int64? = nil, error: String? = nil) throws(Failure) {
        try run("UPDATE downloads SET status = ?, path = COALESCE(?, path), length = COALESCE(?, length), error = ? WHERE gid = ?", [
            .text(status), path.map(Value.text) ?? .null, length.map(Value.integer) ?? .null, error.map(Value.text) ?? .null, .text(gid),
        ])
    }

    func setOptions(_ gid: String, _ options: [String: String]) throws(Failure) {
        try run("UPDATE downloads SET options = ? WHERE gid = ?", [.text(Self.encode(options)), .text(gid)])
    }

    func setURIs(_ gid: String, _ uris: [String]) throws(Failure) {
        try run("UPDATE downloads SET uris = ? WHERE gid = ?", [.text(Self.encode(uris)), .text(gid)])
    }

    func delete(_ gids: [String]) throws(Failure) {
        try transaction { () throws(Failure) in
            for gid in gids { try run("DELETE FROM downloads WHERE gid = ?", [.text(gid)]) }
        }
    }

    /// Numbers `gids` 1, 2, 3… in this order, in one transaction.
    func setOrder(_ gids: [String]) throws(Failure) {
        try transaction { () throws(Failure) in
            for (index, gid) in gids.enumerated() {
                try run("UPDATE downloads SET position = ? WHERE gid = ?", [.integer(Int64(index + 1)), .text(gid)])
            }
        }
    }

    func setting(_ key: String) throws(Failure) -> String? {
        var value: String?
        try query("SELECT value FROM settings WHERE key = ?", [.text(key)]) { value = Self.text($0, 0) }
        return value
    }

    func setSetting(_ key: String, _ value: String) throws(Failure) {
        try run("INSERT OR REPLACE INTO settings VALUES (?, ?)", [.text(key), .text(value)])
    }

    // MARK: SQLite

    enum Value {
        case text(String)
        case integer(Int64)
        case null
    }

    private func transaction(_ body: () throws(Failure) -> Void) throws(Failure) {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func execute(_ sql: String) throws(Failure) {
        guard sqlite3_exec(database, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
    }

    private func run(_ sql: String, _ values: [Value]) throws(Failure) {
        try query(sql, values) { _ in }
    }

    private func query(_ sql: String, _ values: [Value] = [], row: (OpaquePointer) -> Void) throws(Failure) {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw failure(sql) }
        defer { sqlite3_finalize(statement) }
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            switch value {
            case .text(let text): _ = rfsql_bind_text(statement, position, text)
            case .integer(let number): _ = sqlite3_bind_int64(statement, position, number)
            case .null: _ = sqlite3_bind_null(statement, position)
            }
        }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: row(statement)
            case SQLITE_DONE: return
            default: throw failure(sql)
            }
        }
    }

    private func failure(_ sql: String) -> Failure {
        let message = database.map { String(cString: sqlite3_errmsg($0)) } ?? "no database"
        return Failure(description: "the queue \(path): \(message) (\(sql.prefix(40))…)")
    }

    private static func text(_ statement: OpaquePointer, _ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        return String(cString: bytes)
    }

    private static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ text: String?) -> T? {
        text.flatMap { try? JSONDecoder().decode(type, from: Data($0.utf8)) }
    }
}
