import Foundation
import Testing

/// The daemon's web page (`GET /`) in a real browser: Debian's chromium, headless, driven by
/// Selenium (`Tests/Support/web_page_check.py`) as a user would drive it, against a daemon and a
/// fault server started here; then the files it downloaded are checked byte for byte.
@Suite(.serialized)
final class WebPageTests {
    let out: TemporaryDirectory
    let state: TemporaryDirectory
    let server: FaultServer
    let daemon: RunningDaemon
    static let size: Int64 = 8 << 20

    init() throws {
        out = try TemporaryDirectory()
        state = try TemporaryDirectory()
        server = try FaultServer()
        // One download at a time: a download added while another runs waits its turn, so the
        // page has a waiting list to reorder.
        daemon = try RunningDaemon(dir: out.path, stateDir: state.path, extra: ["-j", "1"])
    }

    deinit {
        daemon.stop()
        server.stop()
    }

    static var driverScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/web_page_check.py").path
    }

    /// The page is one HTML file with a strict policy: nothing from elsewhere, not framed; a
    /// foreign Host gets it no more than it gets the RPC.
    @Test func thePageIsServedWithAStrictPolicy() throws {
        let url = "http://127.0.0.1:\(daemon.port)/"
        let head = try TestProcess.run("/usr/bin/curl", ["-s", "-D", "-", "-o", "/dev/null", url]).stdout.lowercased()
        #expect(head.hasPrefix("http/1.1 200"), "\(head)")
        #expect(head.contains("content-type: text/html; charset=utf-8"), "\(head)")
        #expect(head.contains("content-security-policy: default-src 'none'"), "\(head)")
        #expect(head.contains("frame-ancestors 'none'"), "\(head)")
        #expect(head.contains("x-frame-options: deny"), "\(head)")
        let page = try daemon.post("", method: "GET", path: "/index.html")
        #expect(page.status == 200 && page.body.contains("<title>rangefetch</title>"))
        // Self-contained: no script, style, image or frame is loaded from a URL.
        for pattern in ["src=\"http", "href=\"http", "@import", "url("] {
            #expect(!page.body.contains(pattern), "the page refers to another resource: \(pattern)")
        }
        #expect(try daemon.post("", headers: ["Host: evil.example"], method: "GET", path: "/").status == 403)
    }

    /// A wrong token is refused with a message; a URL added on the page completes at 100%, and
    /// a metalink chosen in its file input too; a slow one is paused from its row, moved down the
    /// waiting list, and resumed; the files on disk are the server's bytes.
    @Test func aDownloadIsAddedPausedAndResumedFromThePageInHeadlessChromium() throws {
        let scratch = try TemporaryDirectory("rf-page")
        let fast = server.dataURL(size: Self.size, name: "web-fast.bin")
        let slow = server.dataURL(size: Self.size, name: "web-slow.bin", "rate=300000")
        let running = server.dataURL(size: 4 << 20, name: "web-running.bin", "rate=200000")
        let waiting = server.dataURL(size: 1 << 20, name: "web-waiting.bin")
        let metalink = scratch.file("web.meta4")
        try """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="web-meta.bin"><size>\(2 << 20)</size><url>\(server.dataURL(size: 2 << 20, name: "m.bin"))</url></file>
            </metalink>
            """.write(toFile: metalink, atomically: true, encoding: .utf8)
        let run = try TestProcess.run("/usr/bin/python3", [
            Self.driverScript, "--page", "http://127.0.0.1:\(daemon.port)/", "--token", try #require(daemon.secret),
            "--fast-url", fast, "--slow-url", slow, "--metalink", metalink, "--queue-urls", running, waiting,
            "--screenshot", scratch.file("page.png"), "--timeout", "90",
        ], timeoutSeconds: 480)
        #expect(run.status == 0 && run.stdout.contains("\nPASS"), "driver:\n\(run.stdout)\n\(run.stderr)")
        guard run.status == 0 else { return }

        // What the page did, as the daemon saw it: all complete, the fast one's result cleared,
        // the paused one finished after the one it was moved behind.
        let stopped = try daemon.call("aria2.tellStopped", ["0", "10"]).result as? [[String: Any]] ?? []
        let names = stopped.map { ((($0["files"] as? [[String: Any]])?.first?["path"] as? String) ?? "").split(separator: "/").last.map(String.init) }
        #expect(names == ["web-meta.bin", "web-running.bin", "web-waiting.bin", "web-slow.bin"], "\(stopped)")
        #expect(stopped.allSatisfy { $0["status"] as? String == "complete" }, "\(stopped)")
        for (name, size) in [("web-fast.bin", Self.size), ("web-slow.bin", Self.size), ("web-running.bin", Int64(4 << 20)),
                             ("web-waiting.bin", Int64(1 << 20)), ("web-meta.bin", Int64(2 << 20))] {
            try server.expectFile(out.file(name), size: size, sourceLocation: #_sourceLocation)
        }
        // The pause stopped the transfer: the resumed download fetched only what was missing
        // (the file plus at most what was in flight on its 2 connections).
        let slowBytes = try server.stats().log.filter { $0.path.hasSuffix("web-slow.bin") }.reduce(Int64(0)) { $0 + $1.bytes }
        #expect(slowBytes <= Self.size + (2 << 20), "served \(slowBytes) for \(Self.size)")
        let png = try Data(contentsOf: URL(fileURLWithPath: scratch.file("page.png")))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "screenshot: \(png.count) bytes")
    }
}
