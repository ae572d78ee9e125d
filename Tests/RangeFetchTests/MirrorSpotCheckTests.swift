import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Which bytes of a mirror's ranges are checked, and how a failed check reopens them: tables.
struct MirrorSpotCheckTests {
    @Test(arguments: [Int64(1), 255, 256, 1_000, 25_600, 100_000, 1 << 20, 6_400_000, 64 << 20])
    func aSliceLiesInsideItsRangeAndCostsAtMostOnePercent(size: Int64) {
        var random = SystemRandomNumberGenerator()
        let extent = ByteRange(1_000, 1_000 + size)
        for _ in 0..<200 {
            let slice = MirrorSpotCheck.slice(of: extent, using: &random)
            #expect(slice.lower >= extent.lower && slice.upper <= extent.upper && !slice.isEmpty)
            #expect(slice.count <= max(MirrorSpotCheck.minimumSliceBytes, size / 100))
            #expect(slice.count <= MirrorSpotCheck.maximumSliceBytes)
            if size <= MirrorSpotCheck.minimumSliceBytes { #expect(slice == extent) }
        }
    }

    @Test func slicesMoveAroundSoAMirrorCannotGuessThem() {
        var random = SystemRandomNumberGenerator()
        let extent = ByteRange(0, 64 << 20)
        let slices = Set((0..<50).map { _ in MirrorSpotCheck.slice(of: extent, using: &random) })
        #expect(slices.count > 45)
        #expect(Set(slices.map(\.count)).count > 1, "lengths vary too")
    }

    @Test(arguments: [
        // (size, extents, expected [(lower, upper, written)])
        (Int64(100), [ByteRange(10, 20), ByteRange(15, 30), ByteRange(90, 120)],
         [(Int64(0), Int64(10), Int64(10)), (10, 30, 0), (30, 90, 60), (90, 100, 0)]),
        (100, [ByteRange(0, 100)], [(0, 100, 0)]),
        (100, [ByteRange(0, 10), ByteRange(10, 20)], [(0, 20, 0), (20, 100, 80)]),
        (100, [], [(0, 100, 100)]),
        (100, [ByteRange(50, 50)], [(0, 100, 100)]),
    ] as [(Int64, [ByteRange], [(Int64, Int64, Int64)])])
    func reopeningACompleteFileLeavesOnlyTheExtentsToFetch(size: Int64, extents: [ByteRange], expected: [(Int64, Int64, Int64)]) {
        let states = SegmentState.reopening(size: size, extents: extents)
        #expect(states.coversExactly(size: size))
        #expect(states.map { [$0.range.lower, $0.range.upper, $0.written] } == expected.map { [$0.0, $0.1, $0.2] })
    }
}

/// A mirror that answers the agreement samples truly and sends zeros for real ranges: caught by
/// spot checks against the main URL, dropped, its ranges fetched again. The fault server is the
/// main URL at 127.0.0.1 and the mirror at "localhost" (another origin).
@Suite(.serialized)
final class LyingMirrorTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-liar")
    }

    deinit { server.stop() }

    /// Bytes the main URL served for spot checks: ranged requests of at most 64 KiB.
    private func checkBytes(_ log: [FaultServer.Stats.Entry]) -> Int64 {
        log.filter { $0.host?.hasPrefix("127.0.0.1") == true && $0.status == 206 && $0.bytes <= 65_536 && $0.bytes > 1 }
            .reduce(0) { $0 + $1.bytes }
    }

    /// Downloads `name` (32 MiB) from the main URL (`mainQuery`) with a mirror at "localhost"
    /// that sends zeros past 8 KiB (plus `liarQuery`): the file must be exact and the mirror named
    /// as caught. Returns stderr.
    private func expectLiarCaught(_ name: String, mainQuery: String, liarQuery: String = "",
                                  sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let size: Int64 = 32 << 20
        let main = server.dataURL(size: size, name: name, "rate=6000000" + mainQuery)
        let liar = "http://localhost:\(server.port)/data/\(size)/\(name)?zerosover=8192" + liarQuery
        let result = try runCLI([main, "--mirror", liar, "-n", "4", "--min-segment", "1M", "-o", out.file(name)])
        #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
        try server.expectFile(out.file(name), size: size, sourceLocation: sourceLocation)
        #expect(result.stderr.contains("mirror http://localhost:\(server.port)") && result.stderr.contains("differ from the main URL"),
                "\(result.stderr)", sourceLocation: sourceLocation)
        return result.stderr
    }

    @Test func aMirrorSendingZerosForRealRangesIsDroppedAndItsRangesFetchedAgain() throws {
        let stderr = try expectLiarCaught("l.bin", mainQuery: "")
        #expect(stderr.contains("no checksum to prove the mirrors' bytes"))
    }

    /// The same liar sending a `Content-Digest` of the zeros it sends: a digest a mirror makes of
    /// its own bytes proves they arrived as sent, not that they are the file's, so its ranges are
    /// still spot-checked, and it is caught (74 of 128 blocks were zeros, exit 0, before).
    @Test func aMirrorVouchingForItsZerosWithContentDigestIsStillCaught() throws {
        _ = try expectLiarCaught("v.bin", mainQuery: "&contentdigest=good", liarQuery: "&contentdigest=sent")
    }

    /// Which Content-Digest proofs spare bytes their spot check: the main URL's match, never a
    /// mirror's; a mismatch rejects them wherever they came from.
    @Test func onlyTheMainURLsOwnDigestSettlesItsBytes() {
        #expect(EngineSources.settlesDeliveredBytes(.matched, fromMain: true))
        #expect(!EngineSources.settlesDeliveredBytes(.matched, fromMain: false))
        #expect(EngineSources.settlesDeliveredBytes(.mismatched(algorithm: .sha256, expected: "a", actual: "b"), fromMain: false))
        #expect(!EngineSources.settlesDeliveredBytes(.unproven, fromMain: false))
        #expect(!EngineSources.settlesDeliveredBytes(nil, fromMain: true))
    }

    /// An https download given a plain-http mirror says so: those bytes cross the network in the
    /// clear. (No TLS server is needed to judge the URLs.)
    @Test func aPlainHTTPMirrorOfAnHTTPSDownloadIsNamed() {
        #expect(SourceAddress.downgradesToPlainHTTP(from: "https://a/f", to: "http://b/f"))
        #expect(SourceAddress.downgradesToPlainHTTP(from: "HTTPS://a/f", to: "HTTP://b/f"))
        #expect(!SourceAddress.downgradesToPlainHTTP(from: "https://a/f", to: "https://b/f"))
        #expect(!SourceAddress.downgradesToPlainHTTP(from: "http://a/f", to: "http://b/f"))
        #expect(DownloadWarning.plainHTTPMirror(url: "http://b/f").message.contains("plain http"))
    }

    @Test func anHonestMirrorPassesItsSpotChecksForAtMostOnePercentMoreBytes() throws {
        let size: Int64 = 32 << 20
        let main = server.dataURL(size: size, name: "h.bin", "rate=6000000")
        let mirror = "http://localhost:\(server.port)/data/\(size)/h.bin?rate=6000000"
        let result = try runCLI([main, "--mirror", mirror, "-n", "4", "--min-segment", "1M", "-o", out.file("h.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        try server.expectFile(out.file("h.bin"), size: size, sourceLocation: #_sourceLocation)
        #expect(!result.stderr.contains("dropped"), "\(result.stderr)")
        let log = try server.stats().log
        let fromMirror = log.filter { $0.host?.hasPrefix("localhost") == true && $0.status == 206 && $0.bytes > 4096 }
            .reduce(Int64(0)) { $0 + $1.bytes }
        #expect(fromMirror > 0, "the mirror delivered no range")
        // The agreement samples (4 x 4 KiB) come on top; the checks themselves stay within 1%.
        #expect(checkBytes(log) - 4 * 4096 <= fromMirror / 100 + MirrorSpotCheck.minimumSliceBytes * 8,
                "checked \(checkBytes(log)) bytes for \(fromMirror) from the mirror")
    }

    /// Killed midway, the journal keeps the mirror's bytes as unchecked; the resumed run (without
    /// the mirror now) checks them before calling the file complete, and fetches them again.
    @Test func aMirrorsBytesFromAKilledRunAreCheckedOnResume() throws {
        let size: Int64 = 48 << 20
        let main = server.dataURL(size: size, name: "k.bin", "rate=3000000")
        let liar = "http://localhost:\(server.port)/data/\(size)/k.bin?zerosover=8192&rate=3000000"
        let run = try RunningCLI([main, "--mirror", liar, "-n", "4", "--min-segment", "1M", "-o", out.file("k.bin")])
        #expect(run.waitUntilReceived(12 << 20), "never got 12 MiB")
        // Killed once the journal holds mirror bytes (received is not yet written and recorded).
        let journalPath = out.file("k.bin.part.rfjournal")
        func journal() -> String {
            (try? Data(contentsOf: URL(fileURLWithPath: journalPath))).map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
        let recorded = run.waitUntil { journal().contains("uncheckedMirrorBytes") }
        run.send(SIGKILL)
        _ = try run.wait()
        #expect(recorded && journal().contains("localhost"), "\(journal().prefix(600))")
        let resumed = try runCLI([main, "-n", "4", "--min-segment", "1M", "-o", out.file("k.bin")])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("differ from the main URL"), "\(resumed.stderr)")
        try server.expectFile(out.file("k.bin"), size: size, sourceLocation: #_sourceLocation)
    }

    /// A CRC (S3's kind, here given as --checksum crc32c=) does not prove a mirror's bytes:
    /// anyone can make other bytes match one. The lying mirror is still spot-checked, dropped,
    /// and its ranges fetched again, so the file matches the CRC.
    @Test func aCRCDoesNotSpareAMirrorItsSpotChecks() throws {
        let size: Int64 = 16 << 20
        let hasher = Digest(.crc32c)
        hasher.update(Array(try server.expectedBytes(size: size)))
        let crc = hasher.finalize()
        let main = server.dataURL(size: size, name: "c.bin", "rate=6000000")
        let liar = "http://localhost:\(server.port)/data/\(size)/c.bin?zerosover=8192"
        let result = try runCLI([main, "--mirror", liar, "-n", "4", "--min-segment", "1M", "--checksum", "crc32c=\(crc.hex)",
                                 "-o", out.file("c.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("differ from the main URL"), "\(result.stderr)")
        #expect(result.stderr.contains("no checksum to prove the mirrors' bytes"), "\(result.stderr)")
        try server.expectFile(out.file("c.bin"), size: size, sourceLocation: #_sourceLocation)
    }

    /// With a digest the bytes are proven as a whole: no spot checks, no notice.
    @Test func aChecksumMakesSpotChecksUnnecessary() throws {
        let size: Int64 = 8 << 20
        let expected = try server.expectedBytes(size: size)
        let hasher = Digest(.sha256)
        hasher.update(Array(expected))
        let digest = hasher.finalize()
        let main = server.dataURL(size: size, name: "d.bin", "rate=6000000")
        let mirror = "http://localhost:\(server.port)/data/\(size)/d.bin?rate=6000000"
        let result = try runCLI([main, "--mirror", mirror, "-n", "4", "--min-segment", "1M", "--checksum", "sha256=\(digest.hex)",
                                 "-o", out.file("d.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("spot-checked"), "\(result.stderr)")
    }
}
