import Foundation
import Testing

/// A fleet pulling one hot file through a caching proxy (docs/fleet.md): several rangefetch
/// processes at once ask nginx's slice cache for ranges of one file, and the origin behind it
/// serves the file about once, however many clients and connections there are.
@Suite(.serialized, .enabled(if: CachingNginx.sliceModuleAvailable, "nginx without the slice module"))
final class FleetCacheTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let origin: NginxServer
    let cache: CachingNginx

    init() throws {
        (www, out, origin) = try NginxServer.withScratchDirectories()
        cache = try CachingNginx(origin: origin.baseURL, slice: "4m")
    }

    deinit {
        cache.stop()
        origin.stop()
    }

    @Test func clientsStartedTogetherThroughTheCacheFetchTheFileFromTheOriginOnce() throws {
        let size: Int64 = 64 << 20
        let source = try www.randomFile("hot.bin", size: size)
        let clients = 6
        // All started before any is waited for: they race for the same slices, which is what
        // proxy_cache_lock has to hold together (no timing is assumed: a loaded machine only
        // spreads them out, which makes sharing easier).
        let running = try (1...clients).map { index in
            try RunningCLI(["-q", "-n", "4", "-o", out.file("hot-\(index).bin"), cache.baseURL + "/hot.bin"])
        }
        for (index, client) in running.enumerated() {
            let (status, stderr) = try client.wait(timeoutSeconds: 300)
            #expect(status == 0, "client \(index + 1): \(stderr)")
        }
        let expected = try Checksums.sha256sum(source)
        for index in 1...clients {
            #expect(try Checksums.sha256sum(out.file("hot-\(index).bin")) == expected, "client \(index)")
        }
        // The clients really went through the cache: it served every one of them the whole file …
        let servedToClients = cache.accessLog().filter { $0.path == "/hot.bin" }.reduce(0) { $0 + $1.bytes }
        #expect(servedToClients >= Int64(clients) * size, "the cache served \(servedToClients) bytes")
        // … while the origin sent it about once (slices fetched twice would show here).
        let fromOrigin = origin.accessLog().filter { $0.path == "/hot.bin" }.reduce(0) { $0 + $1.bytes }
        #expect(fromOrigin >= size && fromOrigin <= size + size / 20,
                "the origin served \(fromOrigin) bytes for a file of \(size) to \(clients) clients")
    }
}
