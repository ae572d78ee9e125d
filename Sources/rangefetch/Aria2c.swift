import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch
import RangeFetchDaemon

/// `rangefetch aria2c ARGS`, or rangefetch run under the name `aria2c` (a symlink): aria2c's
/// command line as front-ends and aria2p start it (`--enable-rpc --rpc-listen-port=N --dir=D
/// --conf-path=F --input-file=S …`), running the daemon. As aria2c, no token is asked unless
/// `--rpc-secret` is given, and the queue starts empty (its state is kept in a directory of
/// its own, removed at exit) unless `--state-dir` names one.
struct Aria2c: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aria2c",
        abstract: "Run the daemon with aria2c's command line (for front-ends that start aria2c).",
        discussion: """
        Accepts the flags front-ends pass to aria2c: --enable-rpc, --rpc-listen-port, --rpc-secret, \
        --rpc-allow-origin-all, --dir (-d), --input-file (-i, aria2's session format), --conf-path, \
        --max-concurrent-downloads (-j), -x, -s, and per-download defaults (max-download-limit, \
        pause, split). Flags that change nothing here (--file-allocation, --quiet, --continue, \
        --save-session-interval…) are accepted and said once; other unknown flags are errors. Without \
        --enable-rpc, use rangefetch URL instead. A symlink named aria2c to rangefetch does the same.

        Example:
          rangefetch aria2c --enable-rpc --rpc-listen-port=6800 --dir=/tmp/dl --rpc-secret=S
        """
    )

    @Argument(parsing: .allUnrecognized, help: "aria2c's flags and URIs.")
    var arguments: [String] = []

    func run() async throws {
        try await Self.start(arguments)
    }

    /// Runs the daemon as aria2c `arguments` ask (also when rangefetch runs as `aria2c`).
    static func start(_ arguments: [String]) async throws {
        // Our own extension: where to keep the queue (aria2c keeps none without --save-session).
        var given = arguments
        var stateDirectory: String?
        if let index = given.firstIndex(where: { $0.hasPrefix("--state-dir=") }) {
            stateDirectory = String(given.remove(at: index).dropFirst("--state-dir=".count))
        }
        let flags: Aria2Flags
        do {
            flags = try Aria2Flags.parse(given) { path in try? String(contentsOfFile: path, encoding: .utf8) }
        } catch {
            writeOut("rangefetch aria2c: error: \(error)\n", to: STDERR_FILENO)
            throw CommandFailure(status: ExitStatus.usage)
        }
        guard flags.enableRPC else {
            writeOut("rangefetch aria2c: error: only --enable-rpc is supported; for one download run: rangefetch URL\n", to: STDERR_FILENO)
            throw CommandFailure(status: ExitStatus.usage)
        }
        if !flags.ignored.isEmpty {
            writeOut("rangefetch aria2c: ignored (no effect here): \(flags.ignored.joined(separator: " "))\n", to: STDERR_FILENO)
        }
        var initial: [Aria2SessionFile.Entry] = flags.uris.isEmpty ? [] : [Aria2SessionFile.Entry(uris: flags.uris, options: [:])]
        if let input = flags.inputFile {
            guard let text = try? String(contentsOfFile: input, encoding: .utf8) else {
                writeOut("rangefetch aria2c: error: --input-file \(input): cannot be read\n", to: STDERR_FILENO)
                throw CommandFailure(status: ExitStatus.fileSystem)
            }
            initial += Aria2SessionFile.parse(text)
        }
        let temporary = stateDirectory == nil ? temporaryDirectory() : nil
        defer { if let temporary { removeTree(temporary) } }
        guard let state = stateDirectory ?? temporary else {
            writeOut("rangefetch aria2c: error: cannot create a state directory under /tmp\n", to: STDERR_FILENO)
            throw CommandFailure(status: ExitStatus.fileSystem)
        }
        try await DaemonRun(options: DownloadOptions(), stateDirectory: state, secret: flags.secret, root: flags.directory,
                            port: flags.port, maximumActive: flags.maximumActive, allowOriginAll: flags.allowOriginAll,
                            defaults: flags.defaults, initial: initial, sessionFile: flags.saveSession, name: "rangefetch aria2c").run()
    }

    private static func temporaryDirectory() -> String? {
        var template = Array("/tmp/rangefetch-aria2c.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        return String(cString: made)
    }

    /// Removes the state directory this run made (its queue database and WAL files).
    private static func removeTree(_ path: String) {
        for name in ["queue.sqlite", "queue.sqlite-wal", "queue.sqlite-shm"] { unlink(path + "/" + name) }
        rmdir(path)
    }
}
