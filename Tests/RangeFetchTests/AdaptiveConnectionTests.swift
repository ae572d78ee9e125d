import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `-n auto` end to end: behind a per-connection cap the count grows; where the server or the
/// machine is the limit it stays low. Behaviour (the counts chosen), not timing.
@Suite(.serialized)
final class AdaptiveConnectionTests {
    let out: TemporaryDirectory

    init() throws {
        out = try TemporaryDirectory("rf-auto")
    }

    /// Downloads `url` with `-n auto` up to `maximum`; returns the connection targets reported.
    private func targets(_ url: String, maximum: Int, name: String) async throws -> [Int] {
        var options = DownloadOptions()
        options.destination = .file(out.file(name))
        options.connections = .automatic
        options.maximumConnections = maximum
        let seen = Locked<[Int]>([])
        _ = try await Downloader(options: options).download(url) { event in
            if case .progress(let progress) = event { seen.withLock { $0.append(progress.targetConnections) } }
        }
        return seen.current
    }

    @Test func growsToTheMaximumBehindAPerConnectionCap() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let size: Int64 = 48 << 20
        let url = server.dataURL(size: size, name: "capped.bin", "rate=2000000")
        _ = try await targets(server.dataURL(size: size, name: "warm.bin"), maximum: 4, name: "warm.bin") // server cache
        let seen = try await targets(url, maximum: 32, name: "capped.bin")
        #expect(seen.first == 16)
        #expect(seen.max() == 32, "targets: \(seen)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: out.file("capped.bin")))
        #expect(bytes == (try server.expectedBytes(size: size)))
    }

    /// With the default ceiling (64), a cap that 16 connections cannot fill is met with more:
    /// 0.5 MB/s per connection, where 64 carry 32 MB/s.
    @Test func growsPastSixteenWithTheDefaultCeiling() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let size: Int64 = 32 << 20
        _ = try await targets(server.dataURL(size: size, name: "warm.bin"), maximum: 4, name: "warm.bin") // server cache
        let seen = try await targets(server.dataURL(size: size, name: "slow.bin", "rate=500000"),
                                     maximum: DownloadOptions().maximumConnections, name: "slow.bin")
        #expect(seen.first == 16)
        #expect((seen.max() ?? 0) >= 32, "targets: \(seen)")
        #expect(seen.allSatisfy { $0 <= 64 })
        let bytes = try Data(contentsOf: URL(fileURLWithPath: out.file("slow.bin")))
        #expect(bytes == (try server.expectedBytes(size: size)))
    }

    /// Where it starts (16), with at most one doubling tried: an uncapped path never looks
    /// linear enough to leap to 64.
    @Test func staysLowOnAnUncappedLoopback() async throws {
        let www = try TemporaryDirectory("rf-auto-www")
        let nginx = try NginxServer(docroot: www.path)
        defer { nginx.stop() }
        let source = try www.randomFile("fast.bin", size: 256 << 20)
        let seen = try await targets(nginx.baseURL + "/fast.bin", maximum: 64, name: "fast.bin")
        #expect(seen.first == 16)
        #expect((seen.max() ?? 0) <= 32, "targets: \(seen)")
        #expect(try Checksums.sha256sum(out.file("fast.bin")) == Checksums.sha256sum(source))
    }
}
