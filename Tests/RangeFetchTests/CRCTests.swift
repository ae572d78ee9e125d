import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// CRC32, CRC32C and CRC64NVME against published check values: the catalogue's check (the CRC
/// of `123456789`), RFC 3720's CRC32C examples (B.4), and fed in uneven pieces.
struct CRCTests {
    static let vectors: [(DigestAlgorithm, [UInt8], String)] = [
        (.crc32, Array("123456789".utf8), "cbf43926"),
        (.crc32c, Array("123456789".utf8), "e3069283"),
        (.crc64nvme, Array("123456789".utf8), "ae8b14860a799888"),
        (.crc32, [], "00000000"),
        (.crc32c, [], "00000000"),
        (.crc64nvme, [], "0000000000000000"),
        // RFC 3720 B.4: 32 bytes of zeros, of ones, ascending, descending.
        (.crc32c, [UInt8](repeating: 0, count: 32), "8a9136aa"),
        (.crc32c, [UInt8](repeating: 0xFF, count: 32), "62a8ab43"),
        (.crc32c, (0..<32).map { UInt8($0) }, "46dd794e"),
        (.crc32c, (0..<32).reversed().map { UInt8($0) }, "113fdb5c"),
        // zlib's crc32 of "The quick brown fox jumps over the lazy dog".
        (.crc32, Array("The quick brown fox jumps over the lazy dog".utf8), "414fa339"),
    ]

    @Test(arguments: vectors)
    func matchesPublishedCheckValues(algorithm: DigestAlgorithm, input: [UInt8], hex: String) {
        let digest = Digest(algorithm)
        digest.update(input)
        let value = digest.finalize()
        #expect(value.hex == hex)
        #expect(value.bytes.count == algorithm.byteCount)
    }

    /// Pieces of every length from 0 to 20 bytes, at every alignment: the eight-byte steps
    /// and the byte-at-a-time tail agree with one pass.
    @Test(arguments: [DigestAlgorithm.crc32, .crc32c, .crc64nvme])
    func unevenPiecesGiveTheSameValue(algorithm: DigestAlgorithm) {
        let data = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }
        let whole = Digest(algorithm)
        whole.update(data)
        let expected = whole.finalize()
        let pieces = Digest(algorithm)
        var offset = 0
        var length = 0
        while offset < data.count {
            let end = min(data.count, offset + length)
            pieces.update(Array(data[offset..<end]))
            offset = end
            length = (length + 1) % 21
        }
        #expect(pieces.finalize() == expected)
    }

    @Test func crcsAreNotGuessedFromChecksumFilesButAreNamedInSpecs() throws {
        #expect(try ChecksumSpec.parse("crc32c=E3069283") == DigestValue(algorithm: .crc32c, hex: "e3069283"))
        #expect(try ChecksumSpec.parse("CRC64NVME=ae8b14860a799888").algorithm == .crc64nvme)
        // An 8-digit line in a sha256sum-style file is not taken for a CRC32.
        #expect(throws: DownloadError.self) { try ChecksumSpec.entry(in: "cbf43926  f.bin\n", forFileNamed: "f.bin") }
    }
}
