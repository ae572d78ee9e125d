import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Metalink pieces a journal records as proven (``JournalRecord/verifiedPieces``) are not read
/// and hashed again on a resume; pieces not recorded, or recorded against other digests, are.
@Suite(.serialized)
final class VerifiedPiecesResumeTests {
    let out: TemporaryDirectory
    let server: FaultServer
    static let size: Int64 = 4 << 20

    init() throws {
        out = try TemporaryDirectory()
        server = try FaultServer()
    }

    deinit { server.stop() }

    /// The metalink's digest of piece 1 is wrong, so checking it can only fail: a resume that
    /// takes it as proven (the journal says so, for these very digests) completes without
    /// asking the server for a byte; with other digests recorded it is checked, fails every
    /// round and the download ends with exit 5.
    @Test(arguments: [true, false])
    func provenPiecesAreNotCheckedAgain(recordedForTheseDigests: Bool) throws {
        let bytes = try server.expectedBytes(size: Self.size)
        var (whole, pieces) = MetalinkDownloadTests.digests(of: bytes)
        pieces[1] = MetalinkDownloadTests.sha256(Data("not piece 1".utf8))
        let url = server.dataURL(size: Self.size, name: "v.bin")
        let text = MetalinkDownloadTests.metalink(name: "v.bin", size: Self.size, sha256: whole, pieces: pieces, urls: [url])
        let meta = out.file("v.meta4")
        try text.write(toFile: meta, atomically: true, encoding: .utf8)
        let described = try #require(Metalink.parse(Array(text.utf8), origin: meta).pieces)

        // The whole file in NAME.part, and a journal claiming it with its block CRCs.
        let part = out.file("v.bin.part")
        try bytes.write(to: URL(fileURLWithPath: part))
        let remote = try Prober(request: RequestOptions(), cancellation: CancellationFlag(), loop: CurlLoop()).probe(url)
        let segment = try JournalBlocksResumeTests.withBlocks(SegmentState(range: ByteRange(0, Self.size), written: Self.size),
                                                              of: part, grid: BlockGrid(fileSize: Self.size))
        var record = JournalRecord(file: remote.identity, size: Self.size, segments: [segment])
        var other = described
        other.digests[0] = DigestValue(algorithm: .sha256, bytes: [UInt8](repeating: 0, count: 32))
        record.verifiedPieces = JournalRecord.VerifiedPieces(pieces: recordedForTheseDigests ? described : other, indices: [0, 1, 2, 3])
        try JournalStore(path: out.file("v.bin.part.rfjournal")).write(record)

        let before = try server.stats().log.count
        let result = try runCLI([meta, "-d", out.path])
        if recordedForTheseDigests {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stderr.contains("does not match"), "\(result.stderr)")
            // Only the probe: no range of the file was asked for.
            let asked = try server.stats().log.dropFirst(before)
            #expect(!asked.contains { $0.status == 206 && $0.bytes > 1 }, "\(asked.map { "\($0.method) \($0.range ?? "-") \($0.status) \($0.bytes)" })")
            #expect(try Data(contentsOf: URL(fileURLWithPath: out.file("v.bin"))) == bytes)
        } else {
            #expect(result.status == 5, "\(result.stderr)")
            #expect(result.stderr.contains("piece 1 (bytes 1048576-2097151) does not match"), "\(result.stderr)")
        }
    }
}
