import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The live bar at terminal widths, the `--verbose` line and the JSON version field.
struct ProgressRendererTests {
    static let progress = DownloadProgress(receivedBytes: 420 << 20, totalBytes: 1 << 30, bytesPerSecond: 105.3 * 1048576,
                                           etaSeconds: 6, activeConnections: 12, targetConnections: 16)

    @Test(arguments: [40, 60, 80, 120, 20, 10, 1])
    func barNeverReachesTheLastColumn(columns: Int) {
        let line = ProgressRenderer.bar(Self.progress, columns: columns)
        #expect(line.count <= max(1, columns - 1), "\(columns): '\(line)'")
        #expect(!line.contains("\n"))
    }

    @Test func partsGoInOrderAsTheTerminalNarrows() {
        let wide = ProgressRenderer.bar(Self.progress, columns: 120)
        #expect(wide.hasPrefix("[") && wide.contains("ETA") && wide.contains("12/16 conns") && wide.contains("/ 1.0 GiB"))
        let eighty = ProgressRenderer.bar(Self.progress, columns: 80)
        #expect(eighty.hasPrefix("[") && eighty.contains("ETA") && eighty.contains("conns"))
        let sixty = ProgressRenderer.bar(Self.progress, columns: 60)
        #expect(sixty.hasPrefix("41.0%") && sixty.contains("conns") && !sixty.contains("ETA"), "ETA goes second: \(sixty)")
        let forty = ProgressRenderer.bar(Self.progress, columns: 40)
        #expect(!forty.hasPrefix("["), "the graphic goes first: \(forty)")
        #expect(forty.contains("41.0%") && forty.contains("MiB/s") && !forty.contains("conns"), "then the connections: \(forty)")
        // Each narrower line keeps a subset of the wider one's parts.
        #expect(!ProgressRenderer.bar(Self.progress, columns: 30).contains("ETA"))
    }

    @Test func unknownTotalHasNoGraphic() {
        let progress = DownloadProgress(receivedBytes: 5 << 20, totalBytes: nil, bytesPerSecond: 1_048_576, etaSeconds: nil,
                                        activeConnections: 1, targetConnections: 1)
        #expect(ProgressRenderer.bar(progress, columns: 80) == "5.0 MiB  1.0 MiB/s  1 conn")
    }

    @Test func verboseRequestLineNamesRangeStatusBytesSpeedAndRetry() {
        let end = RequestEnd(range: ByteRange(0, 1 << 20), status: 206, bytes: 1 << 20, seconds: 0.5, retry: 2, failure: nil)
        #expect(ProgressRenderer.requestLine(end) == "bytes 0-1048575: HTTP 206, 1.0 MiB in 0.50 s (2.0 MiB/s), retry 2")
        let failed = RequestEnd(range: nil, status: 0, bytes: 0, seconds: 1, retry: 0, failure: "could not connect")
        #expect(ProgressRenderer.requestLine(failed) == "whole file: no response, 0 B in 1.00 s (0 B/s), failed: could not connect")
    }

    @Test func verboseRequestLineSaysHowItsConnectionCameAbout() {
        var fresh = RequestEnd(range: ByteRange(0, 1 << 20), status: 206, bytes: 1 << 20, seconds: 0.5, retry: 0, failure: nil,
                               httpVersion: "h2")
        fresh.newConnection = true
        fresh.setupSeconds = 0.0104
        fresh.firstByteSeconds = 0.0123
        #expect(ProgressRenderer.requestLine(fresh)
            == "bytes 0-1048575: HTTP 206 (h2), 1.0 MiB in 0.50 s (2.0 MiB/s), new connection in 10 ms, first byte after 12 ms")
        #expect(ProgressRenderer.json(.requestEnded(fresh)).contains("\"new_connection\":true,\"setup_seconds\":0.0104,\"first_byte_seconds\":0.0123"))
        var reused = fresh
        reused.newConnection = false
        reused.setupSeconds = nil
        reused.firstByteSeconds = 0.0004
        #expect(ProgressRenderer.requestLine(reused).hasSuffix("(2.0 MiB/s), reused connection, first byte after 0.4 ms"))
        #expect(!ProgressRenderer.json(.requestEnded(reused)).contains("setup_seconds"))
        reused.packetsOutOfOrder = true
        #expect(ProgressRenderer.requestLine(reused).hasSuffix("first byte after 0.4 ms, packets arrived out of order"))
        #expect(ProgressRenderer.json(.requestEnded(reused)).contains("\"packets_out_of_order\":true"))
    }

    @Test func everyJSONEventStartsWithTheVersion() {
        let events: [DownloadEvent] = [.progress(Self.progress), .warning(.mirrorsSpotCheckedOnly),
                                       .requestEnded(RequestEnd(range: nil, status: 200, bytes: 1, seconds: 1, retry: 0, failure: nil))]
        for event in events { #expect(ProgressRenderer.json(event).hasPrefix("{\"version\":1,\"event\":")) }
        #expect(ProgressRenderer.json(.progress(Self.progress)).contains("\"eta_seconds\":6.0"))
    }

    /// Scripts read `final_url`: where the probe was answered from after redirects (secrets
    /// redacted), the URL itself when nothing redirected.
    @Test func probedJSONNamesTheRedirectTargetAsFinalURL() {
        var remote = RemoteFile(url: "http://h/get?id=1", redirectedTo: "https://cdn/f.iso?X-Amz-Signature=s3cr3t", size: 10,
                                acceptsRanges: true, suggestedName: "f.iso", advertisedDigests: [])
        let redirected = ProgressRenderer.json(.probed(remote))
        #expect(redirected.contains("\"url\":\"http://h/get?id=1\""), "\(redirected)")
        #expect(redirected.contains("\"final_url\":\"https://cdn/f.iso?X-Amz-Signature=REDACTED\""), "\(redirected)")
        remote.redirectedTo = nil
        #expect(ProgressRenderer.json(.probed(remote)).contains("\"final_url\":\"http://h/get?id=1\""))
    }

    @Test func onlyTakeoverWarningsAreRoutine() {
        #expect(DownloadWarning.slowConnectionReplaced(range: ByteRange(0, 10), bytesPerSecond: 5).isRoutine)
        #expect(!DownloadWarning.overlongResponse(url: "http://h/f", range: ByteRange(0, 10)).isRoutine)
    }

    /// A warning's JSON carries its kind for scripts, and its words with secrets redacted.
    @Test func warningJSONHasKindAndRedactedMessage() {
        let line = ProgressRenderer.json(.warning(.mirrorLeftOut(url: "http://m/f", why: "it redirected to http://m/x?X-Amz-Signature=abc123")))
        #expect(line.contains("\"kind\":\"mirror_left_out\""), "\(line)")
        #expect(line.contains("\"message\":\"mirror http://m/f left out: it redirected to http://m/x?X-Amz-Signature=REDACTED"), "\(line)")
        #expect(!line.contains("abc123"), "\(line)")
    }

    /// The finish event gives a stream's time to its first byte, and null for a file.
    @Test func finishCarriesAStreamsTimeToFirstByte() {
        var summary = DownloadSummary(path: "standard output", bytes: 10, transferredBytes: 10, resumedBytes: 0, elapsedSeconds: 1,
                                      verified: [], alreadyComplete: false, segmented: true, verificationSeconds: nil, streamed: true)
        summary.firstByteSeconds = 0.0512
        #expect(ProgressRenderer.json(.finished(summary)).contains("\"first_byte_seconds\":0.0512"))
        summary.firstByteSeconds = nil
        #expect(ProgressRenderer.json(.finished(summary)).contains("\"first_byte_seconds\":null"))
    }
}
