import Foundation
import Testing

/// `rangefetch daemon` end to end, called with curl as aria2's clients call aria2c: downloads
/// added, watched, paused and removed over JSON-RPC; the secret, Host, Origin, path and size
/// rules provoked.
@Suite(.serialized)
final class DaemonTests {
    let out: TemporaryDirectory
    let state: TemporaryDirectory
    let server: FaultServer
    let daemon: RunningDaemon
    static let size: Int64 = 8 << 20

    init() throws {
        out = try TemporaryDirectory()
        state = try TemporaryDirectory()
        server = try FaultServer()
        daemon = try RunningDaemon(dir: out.path, stateDir: state.path)
    }

    deinit {
        daemon.stop()
        server.stop()
    }

    func add(_ url: String, options: String = "{}") throws -> String {
        let answer = try daemon.call("aria2.addUri", ["[\"\(url)\"]", options])
        return try #require(answer.result as? String, "addUri: \(answer.body)")
    }

    @Test func aDownloadAddedOverRPCCompletesExact() throws {
        let gid = try add(server.dataURL(size: Self.size, name: "a.bin"))
        #expect(gid.count == 16 && gid.allSatisfy(\.isHexDigit))
        let fields = try daemon.wait(gid, for: "complete")
        #expect(fields["totalLength"] as? String == String(Self.size) && fields["completedLength"] as? String == String(Self.size))
        try server.expectFile(out.file("a.bin"), size: Self.size, sourceLocation: #_sourceLocation)
        let stopped = try daemon.call("aria2.tellStopped", ["0", "10"]).result as? [[String: Any]]
        #expect(stopped?.map { $0["gid"] as? String } == [gid])
        // A unique prefix names it too.
        #expect(try daemon.status(String(gid.prefix(6)))["gid"] as? String == gid)
    }

    /// A pause is answered once the download has stopped: tellStatus says paused at once and the
    /// file stops growing; unpause goes on from what is on disk.
    @Test func pauseIsAnsweredOnceTheDownloadHasStopped() throws {
        let gid = try add(server.dataURL(size: Self.size, name: "p.bin", "rate=2000000"), options: "{\"split\":\"2\"}")
        let deadline = Date().addingTimeInterval(30)
        while Int64(try daemon.status(gid)["completedLength"] as? String ?? "0") ?? 0 < 2 << 20 {
            guard Date() < deadline else { throw TestFailure("no progress: \(try daemon.status(gid))") }
            usleep(50_000)
        }
        let answer = try daemon.call("aria2.pause", ["\"\(gid)\""])
        #expect(answer.result as? String == gid, "\(answer.body)")
        #expect(try daemon.status(gid)["status"] as? String == "paused")
        let size = try FileManager.default.attributesOfItem(atPath: out.file("p.bin.part"))[.size] as? Int64
        let completed = try daemon.status(gid)["completedLength"] as? String
        usleep(300_000)
        #expect(try daemon.status(gid)["completedLength"] as? String == completed)
        #expect(size == Self.size, "the partial file is preallocated")
        #expect(try daemon.call("aria2.unpause", ["\"\(gid)\""]).result as? String == gid)
        try daemon.wait(gid, for: "complete")
        let served = try server.stats().body_bytes
        try server.expectFile(out.file("p.bin"), size: Self.size, sourceLocation: #_sourceLocation)
        #expect(served <= Self.size + (2 << 20), "served \(served) for \(Self.size)")
    }

    @Test func aWrongTokenIsUnauthorized() throws {
        let answer = try daemon.post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"aria2.tellActive\",\"params\":[\"token:wrong\"]}")
        #expect(answer.status == 400)
        #expect(answer.error?["code"] as? Int == 1 && answer.error?["message"] as? String == "Unauthorized", "\(answer.body)")
        let none = try daemon.post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"aria2.addUri\",\"params\":[[\"\(server.dataURL(size: 10, name: "x.bin"))\"]]}")
        #expect(none.status == 400)
        #expect(!out.exists("x.bin"))
    }

    /// BitTorrent, asked by a magnet URI or addTorrent, gets an error that says so, and nothing
    /// is queued to fail later.
    @Test(arguments: [
        ("aria2.addUri", ["[\"magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567\"]"]),
        ("aria2.addTorrent", ["\"ZDQ6aW5mb2Vl\""]),
    ])
    func bitTorrentIsRefusedClearly(method: String, params: [String]) throws {
        let answer = try daemon.call(method, params)
        #expect((answer.error?["message"] as? String)?.contains("BitTorrent") == true, "\(answer.body)")
        #expect((try daemon.call("aria2.tellWaiting", ["0", "10"]).result as? [Any])?.isEmpty == true)
    }

    /// DNS rebinding (a foreign Host) and foreign web pages are refused before any call runs;
    /// a loopback page with the token is answered, with CORS naming it.
    @Test(arguments: [
        (["Host: evil.example:6800"], 403),
        (["Origin: http://evil.example"], 403),
        (["Origin: http://127.0.0.1.evil.example"], 403),
        (["Origin: http://127.0.0.1:9000"], 200),
        (["Origin: null"], 200),
        (["Host: localhost:6800", "Origin: http://localhost:3000"], 200),
    ])
    func hostAndOriginAreChecked(headers: [String], status: Int) throws {
        let answer = try daemon.post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"aria2.getVersion\",\"params\":[\"token:s3cret\"]}",
                                     headers: headers)
        #expect(answer.status == status, "\(answer.body)")
        if status == 403 { #expect(answer.result == nil) }
        let preflight = try daemon.post("", headers: headers + ["Access-Control-Request-Method: POST"], method: "OPTIONS")
        #expect((preflight.status == 204) == (status == 200), "\(preflight.status)")
    }

    /// `dir` and `out` cannot leave the download root, through `..`, an absolute path or a link.
    @Test(arguments: [
        "{\"dir\":\"/etc\"}", "{\"dir\":\"../\"}", "{\"out\":\"../../x.bin\"}", "{\"out\":\"/tmp/x.bin\"}",
        "{\"dir\":\"link\",\"out\":\"x.bin\"}",
    ])
    func pathsOutsideTheRootAreRefused(options: String) throws {
        try FileManager.default.createSymbolicLink(atPath: out.file("link"), withDestinationPath: state.path)
        let answer = try daemon.call("aria2.addUri", ["[\"\(server.dataURL(size: 10, name: "x.bin"))\"]", options])
        #expect(answer.error?["code"] as? Int == 1, "\(answer.body)")
        #expect((answer.error?["message"] as? String ?? "").contains("outside the download root"), "\(answer.body)")
        #expect((try daemon.call("aria2.tellWaiting", ["0", "10"]).result as? [Any])?.isEmpty == true)
    }

    @Test func aSubdirectoryInsideTheRootIsUsed() throws {
        let gid = try add(server.dataURL(size: 4096, name: "s.bin"), options: "{\"dir\":\"sub/deeper\",\"out\":\"named.bin\"}")
        try daemon.wait(gid, for: "complete")
        #expect(out.exists("sub/deeper/named.bin"))
    }

    @Test func anOversizedBodyIsRefused() throws {
        let answer = try daemon.post("[" + String(repeating: "1,", count: 1_100_000) + "1]")
        #expect(answer.status == 413)
    }

    /// Batches, system.multicall, `jsonrpc` as the number 2.0 (webui-aria2), and errors in place.
    @Test func batchesAndMulticall() throws {
        let batch = try daemon.post("""
            [{"jsonrpc":2.0,"id":1,"method":"aria2.getVersion","params":["token:s3cret"]},
             {"jsonrpc":"2.0","id":2,"method":"aria2.nothing","params":["token:s3cret"]},
             {"jsonrpc":"2.0","id":3,"method":"system.listMethods"}]
            """)
        let answers = try #require(batch.json as? [[String: Any]], "\(batch.body)")
        #expect(answers.count == 3)
        #expect((answers[0]["result"] as? [String: Any])?["version"] != nil)
        #expect((answers[1]["error"] as? [String: Any])?["message"] as? String == "No such method: aria2.nothing")
        #expect((answers[2]["result"] as? [String])?.contains("aria2.addUri") == true)
        let multi = try daemon.post("""
            {"jsonrpc":"2.0","id":"m","method":"system.multicall","params":[[
              {"methodName":"aria2.getGlobalStat","params":["token:s3cret"]},
              {"methodName":"aria2.tellStatus","params":["token:s3cret","0000000000000000"]}]]}
            """)
        let results = try #require(multi.result as? [Any], "\(multi.body)")
        #expect(((results[0] as? [Any])?.first as? [String: Any])?["numActive"] as? String == "0")
        #expect((results[1] as? [String: Any])?["code"] as? Int == 1)
    }

    /// Waiting downloads are listed, reordered and removed (their partial files with them);
    /// max-concurrent-downloads changed live starts them.
    @Test func theQueueIsReorderedAndItsLimitChangedLive() throws {
        #expect(try daemon.call("aria2.changeGlobalOption", ["{\"max-concurrent-downloads\":\"1\"}"]).result as? String == "OK")
        let gids = try ["q1.bin", "q2.bin", "q3.bin"].map {
            try add(server.dataURL(size: Self.size, name: $0, "rate=2000000"), options: "{\"split\":\"1\"}")
        }
        var waiting = try daemon.call("aria2.tellWaiting", ["0", "10", "[\"gid\",\"status\"]"]).result as? [[String: Any]]
        #expect(waiting?.map { $0["gid"] as? String } == [gids[1], gids[2]])
        #expect(try daemon.call("aria2.changePosition", ["\"\(gids[2])\"", "0", "\"POS_SET\""]).result as? Int == 0)
        waiting = try daemon.call("aria2.tellWaiting", ["0", "10"]).result as? [[String: Any]]
        #expect(waiting?.map { $0["gid"] as? String } == [gids[2], gids[1]])
        #expect(try daemon.call("aria2.remove", ["\"\(gids[1])\""]).result as? String == gids[1])
        #expect(try daemon.status(gids[1])["status"] as? String == "removed")
        #expect(try daemon.call("aria2.changeGlobalOption", ["{\"max-concurrent-downloads\":\"3\"}"]).result as? String == "OK")
        let active = try daemon.call("aria2.tellActive", ["[\"gid\"]"]).result as? [[String: Any]]
        #expect(Set(active?.compactMap { $0["gid"] as? String } ?? []) == [gids[0], gids[2]])
        try daemon.wait(gids[0], for: "complete")
        try daemon.wait(gids[2], for: "complete")
        #expect(!out.exists("q2.bin") && !out.exists("q2.bin.part"))
    }

    /// Without --rpc-secret a secret is made once, kept 0600 in the state directory, and asked.
    @Test func aSecretIsMadeWhenNoneIsGiven() throws {
        let other = try TemporaryDirectory()
        let keyless = try RunningDaemon(dir: out.path, stateDir: other.path, secret: nil)
        defer { keyless.stop() }
        let path = other.file("rpc-secret")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let secret = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.count == 32)
        #expect(try keyless.call("aria2.getVersion").status == 400)
        let answer = try keyless.post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"aria2.getVersion\",\"params\":[\"token:\(secret)\"]}")
        #expect(answer.status == 200 && answer.result != nil, "\(answer.body)")
    }

    /// changeUri on a paused download: the wrong URI goes, the right one comes, getUris and the
    /// store say so, and the download then fetches from the new URI only.
    @Test func changeUriReplacesAURIBeforeTheDownloadStarts() throws {
        let wrong = server.dataURL(size: 1 << 20, name: "wrong.bin")
        let right = server.dataURL(size: Self.size, name: "c.bin")
        let gid = try add(wrong, options: "{\"pause\":\"true\",\"out\":\"c.bin\"}")
        let answer = try daemon.call("aria2.changeUri", ["\"\(gid)\"", "1", "[\"\(wrong)\"]", "[\"\(right)\"]"])
        #expect(answer.result as? [Int] == [1, 1], "\(answer.body)")
        let uris = try daemon.call("aria2.getUris", ["\"\(gid)\""]).result as? [[String: Any]]
        #expect(uris?.compactMap { $0["uri"] as? String } == [right])
        let empty = try daemon.call("aria2.changeUri", ["\"\(gid)\"", "1", "[\"\(right)\"]", "[]"])
        #expect(empty.error?["message"] as? String == "changeUri: GID#\(gid) would be left with no URI", "\(empty.body)")
        #expect(try daemon.call("aria2.unpause", ["\"\(gid)\""]).result as? String == gid)
        try daemon.wait(gid, for: "complete")
        try server.expectFile(out.file("c.bin"), size: Self.size, sourceLocation: #_sourceLocation)
    }

    /// A second daemon on a state directory in use is refused at once, naming the first's pid,
    /// and the first goes on answering; once the first is gone (even by kill -9) the directory
    /// is free again.
    @Test func aSecondDaemonOnTheSameStateDirectoryIsRefused() throws {
        let second = try TestProcess.run(try TestProcess.rangefetchBinary,
                                         ["daemon", "--rpc-listen-port", "0", "--dir", out.path, "--state-dir", state.path,
                                          "--rpc-secret", "s3cret"], timeoutSeconds: 30)
        #expect(second.status != 0)
        #expect(second.stderr.contains("another rangefetch daemon (pid \(daemon.process.processIdentifier)) uses the state directory"),
                "\(second.stderr)")
        #expect(try daemon.call("aria2.getVersion").status == 200)
        daemon.kill9()
        let next = try RunningDaemon(dir: out.path, stateDir: state.path)
        defer { next.stop() }
        #expect(try next.call("aria2.getVersion").status == 200)
    }

    /// 1,100 idle clients (half silent, half stopped mid-head, as slowloris does) do not keep a
    /// real one out, though the daemon was started with the common soft limit of 1,024
    /// descriptors: it raises its own. The daemon really holds them (its descriptor count).
    @Test func aThousandIdleConnectionsDoNotStarveARealClient() throws {
        try raiseOpenFileLimitToHard()
        let limited = try withOpenFileLimit(1024) { () throws -> RunningDaemon in
            let other = try TemporaryDirectory()
            return try RunningDaemon(dir: out.path, stateDir: other.path)
        }
        defer { limited.stop() }
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        for index in 0..<1100 {
            let socket = try connectedSocket(port: limited.port)
            sockets.append(socket)
            if index % 2 == 1 {
                let partial = Array("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
                _ = write(socket, partial, partial.count)
            }
        }
        let deadline = Date().addingTimeInterval(20)
        var held = 0
        while held < 1100, Date() < deadline {
            held = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(limited.process.processIdentifier)/fd").count) ?? 0
            usleep(50_000)
        }
        #expect(held >= 1100, "the daemon holds \(held) descriptors")
        let started = Date()
        let answer = try limited.call("aria2.getVersion")
        #expect(answer.status == 200 && answer.result != nil, "\(answer.body)")
        // Loose on purpose (a loaded 2-core machine); a starved client waits for ever.
        #expect(Date().timeIntervalSince(started) < 10)
        let gid = try #require(try limited.call("aria2.addUri", ["[\"\(server.dataURL(size: 1 << 20, name: "idle.bin"))\"]"]).result as? String)
        try limited.wait(gid, for: "complete")
    }

    /// Run as aria2c with `--save-session FILE`, the file is aria2's session after every change:
    /// an added download is in it at once, a paused one with `pause=true`, a finished one is
    /// gone; aria2c reading it back with `--input-file` gets the paused one, still paused.
    @Test func aria2cModeWritesItsSessionFileOnEveryChange() throws {
        let session = out.file("session.txt")
        func start(_ extra: [String]) throws -> RunningDaemon {
            try RunningDaemon(arguments: ["aria2c", "--enable-rpc", "--rpc-listen-port=\(try freePort())", "--dir=\(out.path)",
                                          "--rpc-secret=s3cret", "--save-session=\(session)"] + extra, secret: "s3cret")
        }
        let first = try start([])
        let kept = server.dataURL(size: Self.size, name: "kept.bin")
        let paused = try #require(try first.call("aria2.addUri", ["[\"\(kept)\"]", "{\"pause\":\"true\"}"]).result as? String)
        var text = try String(contentsOfFile: session, encoding: .utf8)
        #expect(text.contains(kept + "\n gid=\(paused)\n pause=true\n"), "\(text)")
        let done = try #require(try first.call("aria2.addUri", ["[\"\(server.dataURL(size: 1 << 20, name: "done.bin"))\"]"]).result as? String)
        #expect(try String(contentsOfFile: session, encoding: .utf8).contains("gid=\(done)"))
        try first.wait(done, for: "complete")
        let deadline = Date().addingTimeInterval(10)
        repeat {
            text = try String(contentsOfFile: session, encoding: .utf8)
            if !text.contains("gid=\(done)") { break }
            usleep(50_000)
        } while Date() < deadline
        #expect(!text.contains("gid=\(done)") && text.contains("gid=\(paused)"), "a finished download leaves the session: \(text)")
        first.kill9()

        let second = try start(["--input-file=\(session)"])
        defer { second.stop() }
        #expect(try second.status(paused)["status"] as? String == "paused")
    }

    /// The bytes the server sends over `seconds`, after `settle` seconds for the socket buffers
    /// to fill (until they do, the server sends faster than we read).
    func servedRate(settle: Double = 1.5, seconds: Double = 2) throws -> Double {
        usleep(useconds_t(settle * 1_000_000))
        let before = try server.stats().written_bytes
        usleep(useconds_t(seconds * 1_000_000))
        return Double(try server.stats().written_bytes - before) / seconds
    }

    /// Speed limits change while downloads run, and the server sees it: a download's own
    /// `max-download-limit` (changeOption) and `max-overall-download-limit` shared among the
    /// running ones (changeGlobalOption); lifting them lets the files finish, exact.
    @Test func speedLimitsChangeLiveAtTheServer() throws {
        let size: Int64 = 48 << 20
        let first = try add(server.dataURL(size: size, name: "l1.bin", "rate=4000000"), options: "{\"split\":\"2\"}")
        let second = try add(server.dataURL(size: size, name: "l2.bin", "rate=4000000"), options: "{\"split\":\"2\"}")
        let deadline = Date().addingTimeInterval(30)
        while try daemon.status(first)["status"] as? String != "active" || daemon.status(second)["status"] as? String != "active" {
            guard Date() < deadline else { throw TestFailure("not both running") }
            usleep(50_000)
        }
        let free = try servedRate(settle: 0.5, seconds: 1)

        #expect(try daemon.call("aria2.changeGlobalOption", ["{\"max-overall-download-limit\":\"1M\"}"]).result as? String == "OK")
        let shared = try servedRate()
        #expect(shared < 1.6 * Double(1 << 20), "overall 1 MiB/s: the server sent \(shared) B/s (unlimited: \(free))")

        #expect(try daemon.call("aria2.changeGlobalOption", ["{\"max-overall-download-limit\":\"0\"}"]).result as? String == "OK")
        #expect(try daemon.call("aria2.changeOption", ["\"\(first)\"", "{\"max-download-limit\":\"256K\"}"]).result as? String == "OK")
        #expect(try daemon.call("aria2.pause", ["\"\(second)\""]).result as? String == second)
        let own = try servedRate()
        #expect(own < 1.6 * Double(256 << 10), "own 256 KiB/s: the server sent \(own) B/s")
        #expect(free > 4 * Double(1 << 20), "unlimited, the two ran at \(free) B/s")

        #expect(try daemon.call("aria2.changeOption", ["\"\(first)\"", "{\"max-download-limit\":\"0\"}"]).result as? String == "OK")
        #expect(try daemon.call("aria2.unpause", ["\"\(second)\""]).result as? String == second)
        try daemon.wait(first, for: "complete", seconds: 60)
        try daemon.wait(second, for: "complete", seconds: 60)
        try server.expectFile(out.file("l1.bin"), size: size, sourceLocation: #_sourceLocation)
        try server.expectFile(out.file("l2.bin"), size: size, sourceLocation: #_sourceLocation)
    }

    /// `aria2.shutdown` and `aria2.forceShutdown` are answered "OK" before the daemon closes:
    /// the server waits for the answers it owes (CI once saw aria2p's forceShutdown get a
    /// closed connection instead), then the process exits 0. A few daemons each, since the
    /// race was one of timing.
    @Test(arguments: ["aria2.shutdown", "aria2.forceShutdown"])
    func shutdownIsAnsweredBeforeTheDaemonExits(method: String) throws {
        for _ in 0..<12 {
            let other = try TemporaryDirectory()
            let stopping = try RunningDaemon(dir: out.path, stateDir: other.path)
            let answer = try stopping.call(method)
            #expect(answer.status == 200 && answer.result as? String == "OK", "\(method): \(answer.status) \(answer.body)")
            let deadline = Date().addingTimeInterval(20)
            while stopping.process.isRunning, Date() < deadline { usleep(20_000) }
            #expect(!stopping.process.isRunning && stopping.process.terminationStatus == 0)
        }
    }
}

/// Runs `body` with this process's soft descriptor limit at `soft` (children started inside
/// inherit it), then puts the limit back.
func withOpenFileLimit<T>(_ soft: rlim_t, _ body: () throws -> T) throws -> T {
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    var saved = rlimit()
    guard getrlimit(resource, &saved) == 0 else { throw TestFailure("getrlimit: \(errno)") }
    var lowered = saved
    lowered.rlim_cur = min(soft, saved.rlim_max)
    guard setrlimit(resource, &lowered) == 0 else { throw TestFailure("setrlimit: \(errno)") }
    defer { _ = setrlimit(resource, &saved) }
    return try body()
}

/// This test process holds the idle clients' sockets: its soft limit goes to the hard one.
func raiseOpenFileLimitToHard() throws {
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    var limit = rlimit()
    guard getrlimit(resource, &limit) == 0 else { throw TestFailure("getrlimit: \(errno)") }
    limit.rlim_cur = limit.rlim_max
    guard setrlimit(resource, &limit) == 0 else { throw TestFailure("setrlimit: \(errno)") }
}

/// A TCP connection to 127.0.0.1:`port`.
func connectedSocket(port: Int) throws -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw TestFailure("socket: \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        close(socket)
        throw TestFailure("connect to port \(port): \(errno)")
    }
    return socket
}

/// A TCP port free on 127.0.0.1 now (bound, read, closed), for a program that needs a port named.
func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw TestFailure("socket: \(errno)") }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
    }
    guard bound else { throw TestFailure("bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
