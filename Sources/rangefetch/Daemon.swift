import ArgumentParser
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import NIOPosix
import RangeFetch
import RangeFetchDaemon

/// `rangefetch daemon`: a download queue that other programs drive over aria2's JSON-RPC.
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Keep a queue of downloads that other programs drive over aria2's JSON-RPC.",
        discussion: """
        Listens on 127.0.0.1:6800 (aria2's port) and answers aria2's JSON-RPC 2.0 at POST /jsonrpc: \
        aria2.addUri, tellStatus, tellActive, tellWaiting, tellStopped, pause, unpause, remove, \
        changePosition, changeUri, changeGlobalOption (max-concurrent-downloads), getGlobalStat and the rest \
        (system.listMethods lists them), so aria2 front-ends and clients such as aria2p can drive it. \
        Runs in the foreground; stop it with Ctrl-C, SIGTERM or aria2.shutdown: running downloads \
        are stopped with their journals written, and resume when added again.

        Every call carries the secret as its first parameter, "token:SECRET". Without \
        --rpc-secret, a secret is made once and kept in STATE-DIR/rpc-secret (mode 0600). \
        Requests whose Host is not localhost, 127.0.0.1 or [::1] are refused (DNS rebinding), and \
        so are web pages from other origins unless --rpc-allow-origin-all is given. Downloads \
        go under --dir; a call's dir and out options cannot leave it.

        The queue, each download's options, status and place, is kept in STATE-DIR/queue.sqlite, \
        every change committed before it is answered: after a crash or kill -9, a restart with the \
        same state directory shows every download as it was, paused ones paused, and the others \
        resume from their journals.

        Notifications (aria2.onDownloadStart, onDownloadComplete…) go over the WebSocket at         /jsonrpc. One daemon per state directory: a second one on the same --state-dir is refused.         `rangefetch aria2c ARGS` reads aria2c's own command line instead.

        Examples:
          rangefetch daemon --dir ~/Downloads
          curl -s http://127.0.0.1:6800/jsonrpc -d '{"jsonrpc":"2.0","id":1,"method":"aria2.addUri","params":["token:SECRET",["https://example.com/big.iso"]]}'
        """
    )

    @Option(name: .customLong("rpc-listen-port"), help: ArgumentHelp("The port to listen on (0: any free port, said on standard output).", valueName: "port"))
    var port = 6800

    @Option(name: .customLong("rpc-secret"), help: ArgumentHelp("The secret every call must carry as \"token:SECRET\" (default: the one kept in the state directory).", valueName: "secret"))
    var secret: String?

    @Flag(name: .customLong("rpc-allow-origin-all"), help: "Answer web pages from any origin (they still need the secret).")
    var allowOriginAll = false

    @Option(name: [.customShort("d"), .customLong("dir")], help: ArgumentHelp("The download root: files go here, and calls cannot write outside it.", valueName: "dir"))
    var directory = "."

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Where the daemon keeps its queue and secret (default $XDG_STATE_HOME/rangefetch, else ~/.local/state/rangefetch).", valueName: "dir"))
    var stateDirectory: String?

    @Option(name: [.customShort("j"), .customLong("max-concurrent-downloads")], help: ArgumentHelp("Downloads running at once (changed live by changeGlobalOption).", valueName: "n"))
    var maximumActive = 5

    @OptionGroup(title: "Network options (for every download)") var network: NetworkOptions

    func validate() throws {
        try network.check()
        guard (0...65535).contains(port) else { throw ValidationError("--rpc-listen-port must be 0-65535") }
        guard maximumActive >= 1 else { throw ValidationError("--max-concurrent-downloads must be at least 1") }
    }

    func run() async throws {
        var options = DownloadOptions()
        try network.apply(to: &options)
        let state = stateDirectory ?? DaemonSecret.defaultDirectory()
        let secret: String
        do {
            // Made first: it creates the state directory (0700), where the queue lives too.
            secret = try DaemonSecret.loadOrCreate(in: state, given: self.secret)
        } catch {
            writeOut("rangefetch: error: \(error)\n", to: STDERR_FILENO)
            throw CommandFailure(status: ExitStatus.fileSystem)
        }
        try await DaemonRun(options: options, stateDirectory: state, secret: secret, root: directory, port: port,
                            maximumActive: maximumActive, allowOriginAll: allowOriginAll).run()
    }
}

/// One daemon's life, for `rangefetch daemon` and `rangefetch aria2c`: the queue read back,
/// the server started, then everything stopped in order (server, downloads, events).
struct DaemonRun {
    var options: DownloadOptions
    var stateDirectory: String
    /// `nil`: no token asked (aria2c without `--rpc-secret`).
    var secret: String?
    var root: String
    var port: Int
    var maximumActive: Int
    var allowOriginAll: Bool
    var defaults: [String: String] = [:]
    /// Downloads to add at start (aria2c's `--input-file`, URIs on its command line).
    var initial: [Aria2SessionFile.Entry] = []
    /// aria2c's `--save-session FILE`, rewritten after every change.
    var sessionFile: String?
    var name = "rangefetch daemon"

    func run() async throws {
        Self.raiseOpenFileLimit()
        // Transfers run 5 nice steps below the RPC: front-ends polling status while the
        // downloads saturate the CPU are answered within a few milliseconds (bench.sh daemon).
        let queue = DownloadQueue(options: options, maximumActive: maximumActive, transferNiceness: 5)
        let stop = DaemonStop()
        // One event loop carries the server and the service's actor; it is shut down last, once
        // the service has taken the queue's final events.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let service: Aria2Service
        do {
            service = try Aria2Service(queue: queue, root: root, options: options, stateDirectory: stateDirectory,
                                       eventLoop: group.next(), defaults: defaults, sessionFile: sessionFile) { stop.trip() }
        } catch {
            writeOut("rangefetch: error: \(error)\n", to: STDERR_FILENO)
            throw CommandFailure(status: ExitStatus.fileSystem)
        }
        let events = queue.events()
        let follower = Task { await service.follow(events) }
        do {
            try await service.restore()
            for entry in initial { try await service.add(uris: entry.uris, options: entry.options) }
        } catch {
            writeOut("rangefetch: error: \(error)\n", to: STDERR_FILENO)
            throw CommandFailure(status: ExitStatus.fileSystem)
        }
        let server: RPCServer
        do {
            server = try await RPCServer(host: "127.0.0.1", port: port, service: service, token: secret,
                                         allowOriginAll: allowOriginAll, notifications: service.notifications)
        } catch {
            writeOut("rangefetch: error: cannot listen on 127.0.0.1:\(port): \(error)\n", to: STDERR_FILENO)
            throw CommandFailure(status: ExitStatus.other)
        }
        stop.attach(server)
        writeOut("\(name): listening on http://127.0.0.1:\(server.port)/jsonrpc\n", to: STDOUT_FILENO)
        let interrupts = Interrupts { stop.trip() }
        await server.run()
        withExtendedLifetime(interrupts) {}
        await queue.shutdown()
        await follower.value
        try? await group.shutdownGracefully()
    }

    /// Every client connection, idle or not, holds a descriptor, as does every download's file
    /// and connection: the soft limit (1,024 on many systems) goes up to the hard one, so a
    /// thousand idle clients do not keep a real one out.
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(resource, &limit)
    }
}

/// Closes the server once, from a signal or `aria2.shutdown`; a trip before the server is
/// attached closes it when it is.
final class DaemonStop: Sendable {
    private let state = Mutex<(server: RPCServer?, tripped: Bool)>((nil, false))

    func attach(_ server: RPCServer) {
        let tripped = state.withLock { state in
            state.server = server
            return state.tripped
        }
        if tripped { server.close() }
    }

    func trip() {
        let server = state.withLock { state in
            state.tripped = true
            return state.server
        }
        server?.close()
    }
}
