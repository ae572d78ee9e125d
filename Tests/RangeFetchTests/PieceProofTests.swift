import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Which metalink pieces a response proves as its bytes arrive (``PieceProof``, ``PieceHasher``),
/// and that pieces proven so are not read back after the run (``PieceRounds/prove(_:)``).
struct PieceProofTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        /// Pieces of 100 bytes.
        var size: Int64
        var start: Int64
        /// Each chunk's byte count and the segment's end while it arrives.
        var chunks: [(count: Int, segmentEnd: Int64)]
        /// The spans of each chunk: piece, bytes of the chunk, starts, completes.
        var spans: [[PieceProof.Span]]
        var testDescription: String { name }
    }

    static func span(_ piece: Int, _ bytes: Range<Int>, starts: Bool = false, completes: Bool = false) -> PieceProof.Span {
        PieceProof.Span(piece: piece, bytes: bytes, starts: starts, completes: completes)
    }

    static let cases: [Case] = [
        Case(name: "two whole pieces in one chunk, then a third over two chunks", size: 1000, start: 0,
             chunks: [(200, 1000), (50, 1000), (50, 1000)],
             spans: [[span(0, 0..<100, starts: true, completes: true), span(1, 100..<200, starts: true, completes: true)],
                     [span(2, 0..<50, starts: true)], [span(2, 0..<50, completes: true)]]),
        Case(name: "a response starting mid-piece proves from the next piece on", size: 1000, start: 150,
             chunks: [(100, 1000), (100, 1000)],
             spans: [[span(2, 50..<100, starts: true)], [span(2, 0..<50, completes: true), span(3, 50..<100, starts: true)]]),
        Case(name: "a segment boundary cuts the last piece it reaches", size: 1000, start: 200,
             chunks: [(150, 350)],
             spans: [[span(2, 0..<100, starts: true, completes: true)]]),
        Case(name: "the last short piece completes at the file's end", size: 250, start: 100,
             chunks: [(120, 250), (30, 250)],
             spans: [[span(1, 0..<100, starts: true, completes: true), span(2, 100..<120, starts: true)],
                     [span(2, 0..<30, completes: true)]]),
        Case(name: "a split mid-piece abandons the piece being hashed", size: 1000, start: 0,
             chunks: [(150, 1000), (20, 170)],
             spans: [[span(0, 0..<100, starts: true, completes: true), span(1, 100..<150, starts: true)], []]),
        Case(name: "a split at a piece boundary leaves the pieces before it proven", size: 1000, start: 0,
             chunks: [(50, 1000), (50, 100)],
             spans: [[span(0, 0..<50, starts: true)], [span(0, 0..<50, completes: true)]]),
        Case(name: "a segment shorter than a piece proves nothing", size: 1000, start: 300,
             chunks: [(60, 360)], spans: [[]]),
    ]

    @Test(arguments: cases)
    func plansWhichBytesProveWhichPieces(_ example: Case) {
        var proof = PieceProof(length: 100, size: example.size, start: example.start)
        for (chunk, expected) in zip(example.chunks, example.spans) {
            #expect(proof.take(chunk.count, segmentEnd: chunk.segmentEnd) == expected)
        }
    }

    static let content: [UInt8] = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    /// Piece digests (sha-256, 100-byte pieces) of ``content``, piece `wrong` given another's.
    static func pieces(wrong: Int? = nil) -> Metalink.Pieces {
        let digests = (0..<10).map { index -> DigestValue in
            let digest = Digest(.sha256)
            digest.update(Array(content[(index == wrong ? 0 : index) * 100 ..< (index == wrong ? 1 : index + 1) * 100]))
            return digest.finalize()
        }
        return Metalink.Pieces(length: 100, digests: digests)
    }

    static func feed(_ hasher: PieceHasher, from start: Int, chunks: [Int], segmentEnd: Int64 = 1000) -> [PieceOutcome] {
        var offset = start
        var outcomes: [PieceOutcome] = []
        for count in chunks {
            outcomes += content[offset..<offset + count].withUnsafeBytes { hasher.update($0, segmentEnd: segmentEnd) }
            offset += count
        }
        return outcomes
    }

    /// A response from byte 30 in uneven chunks: pieces 1 to 4 matched, piece 0 (begun before it)
    /// never checked.
    @Test func piecesDeliveredWholeMatch() throws {
        let hasher = try #require(PieceHasher(pieces: Self.pieces(), size: 1000, start: 30))
        let outcomes = Self.feed(hasher, from: 30, chunks: [7, 93, 64, 136, 170])
        #expect(outcomes.map(\.index) == [1, 2, 3, 4] && outcomes.allSatisfy(\.matched))
        #expect(outcomes.first?.range == ByteRange(100, 200))
        #expect(hasher.mismatch == nil)
    }

    /// A bad piece is reported once, with its range, and nothing after it is hashed.
    @Test func aBadPieceStopsTheHashing() throws {
        let hasher = try #require(PieceHasher(pieces: Self.pieces(wrong: 2), size: 1000, start: 0))
        let outcomes = Self.feed(hasher, from: 0, chunks: [250, 250])
        #expect(outcomes == [PieceOutcome(index: 0, range: ByteRange(0, 100), matched: true),
                             PieceOutcome(index: 1, range: ByteRange(100, 200), matched: true),
                             PieceOutcome(index: 2, range: ByteRange(200, 300), matched: false)])
        #expect(hasher.mismatch?.index == 2)
        #expect(Self.feed(hasher, from: 500, chunks: [100]).isEmpty)
    }

    /// Where the response's bytes stop being vouched for, chunk after chunk: from the first byte
    /// of the piece being hashed (its bytes are written before it is known good), nowhere while it
    /// runs mid-piece or between pieces, and from the bad piece once one failed.
    @Test(arguments: [
        // start, chunks fed, wrong piece, then unproven from
        (0, [0], nil, Int64?.none),          // no byte yet
        (0, [50], nil, 0),                   // inside piece 0
        (0, [100], nil, nil),                // piece 0 matched, piece 1 not begun
        (0, [150], nil, 100),                // inside piece 1
        (30, [50], nil, nil),                // began inside piece 0: never hashed, the after-run check's
        (30, [120], nil, 100),               // then piece 1 from its first byte
        (0, [250], 2, 200),                  // piece 2 being hashed (bad, not known yet)
        (0, [300], 2, 200),                  // piece 2 failed: from it on
        (0, [400], 2, 200),                  // nothing hashed after the failure
    ] as [(Int, [Int], Int?, Int64?)])
    func unprovenFromFollowsThePieceBeingHashed(start: Int, chunks: [Int], wrong: Int?, expected: Int64?) throws {
        let hasher = try #require(PieceHasher(pieces: Self.pieces(wrong: wrong), size: 1000, start: Int64(start)))
        _ = Self.feed(hasher, from: start, chunks: chunks)
        #expect(hasher.unprovenFrom == expected)
    }

    /// Without piece digests or a size there is nothing to hash (and no cost).
    @Test func noDigestsNoHasher() {
        #expect(PieceHasher(pieces: nil, size: 1000, start: 0) == nil)
        #expect(PieceHasher(pieces: Self.pieces(), size: nil, start: 0) == nil)
    }

    static func mirrors() throws -> MirrorAgreement {
        MirrorAgreement(url: "http://127.0.0.1:1/p", options: DownloadOptions(), cancellation: CancellationFlag(), loop: try CurlLoop()) { _ in }
    }

    /// Pieces proven in flight are not read back: the file's pieces 0 and 2 are garbage, so
    /// reading them could only fail, yet after ``PieceRounds/prove(_:)`` the check finds every
    /// piece good and the journal's verified set names them.
    @Test func provenPiecesAreNotReadBackAfterTheRun() throws {
        let directory = try TemporaryDirectory()
        var bytes = Self.content
        for index in [0, 2] { for offset in index * 100 ..< index * 100 + 100 { bytes[offset] ^= 0xff } }
        let path = directory.file("p.bin")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let file = try PartialFile(existingAt: path, writable: false)
        var rounds = PieceRounds(digests: Self.pieces())
        rounds.prove([0, 2])
        var warnings: [DownloadEvent] = []
        let refetch = try rounds.refetch(file: file, size: 1000, mirrorExtents: [:], mainURL: "http://127.0.0.1:1/p",
                                         mirrors: try Self.mirrors(), cancellation: CancellationFlag()) { warnings.append($0) }
        #expect(refetch == nil && warnings.isEmpty, "proven pieces were read back: \(warnings)")
        #expect(rounds.verified == JournalRecord.VerifiedPieces(pieces: Self.pieces(), indices: Array(0..<10)))

        // Without the proof the same check reads them and finds both bad.
        var unproven = PieceRounds(digests: Self.pieces())
        let plan = try unproven.refetch(file: file, size: 1000, mirrorExtents: [:], mainURL: "http://127.0.0.1:1/p",
                                        mirrors: try Self.mirrors(), cancellation: CancellationFlag()) { _ in }
        #expect(plan != nil && unproven.lastBad.map(\.index) == [0, 2])
    }
}
