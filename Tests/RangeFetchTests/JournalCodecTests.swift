import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

struct JournalCodecTests {
    let remote = RemoteFile(url: "http://127.0.0.1/a", redirectedTo: "http://127.0.0.1/b", size: 300, acceptsRanges: true,
                            etag: "\"e1\"", lastModified: "Sun, 22 Nov 2026 10:00:00 GMT", suggestedName: "a",
                            advertisedDigests: [])

    var record: JournalRecord {
        JournalRecord(file: remote.identity, size: 300, segments: [
            SegmentState(range: ByteRange(0, 100), written: 100),
            SegmentState(range: ByteRange(100, 200), written: 37),
            SegmentState(range: ByteRange(200, 300), written: 0),
        ])
    }

    @Test func roundTripsARecord() throws {
        let decoded = try JournalCodec.decode(JournalCodec.encode(record))
        #expect(decoded == record)
        #expect(decoded.writtenBytes == 137)
        #expect(decoded.matches(remote.identity))
    }

    @Test func rejectsEveryTruncation() {
        let bytes = JournalCodec.encode(record)
        for length in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: JournalCodec.DecodeError.self) { try JournalCodec.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func rejectsAFlippedByte() {
        var bytes = JournalCodec.encode(record)
        bytes[bytes.count - 5] ^= 0x01
        #expect(throws: JournalCodec.DecodeError.checksumMismatch) { try JournalCodec.decode(bytes) }
    }

    @Test func rejectsForeignFilesAndUnknownVersions() {
        #expect(throws: JournalCodec.DecodeError.notAJournal) { try JournalCodec.decode(Array("hello\nworld".utf8)) }
        var text = String(decoding: JournalCodec.encode(record), as: UTF8.self)
        text = text.replacingFirst("rangefetch-journal 2", with: "rangefetch-journal 9")
        #expect(throws: JournalCodec.DecodeError.unsupportedVersion(9)) { try JournalCodec.decode(Array(text.utf8)) }
    }

    @Test func rejectsSegmentsThatDoNotCoverTheFile() {
        var broken = record
        broken.segments.removeLast()
        #expect(throws: JournalCodec.DecodeError.self) { try JournalCodec.decode(JournalCodec.encode(broken)) }
    }

    // MARK: Version 2

    /// A version 2 record with block CRCs (the last one partial) and proven pieces.
    var recordWithBlocks: JournalRecord {
        var record = record
        record.blockBytes = 4096
        record.segments = [
            SegmentState(range: ByteRange(0, 100), written: 100, blocks: [0xDEAD_BEEF]),
            SegmentState(range: ByteRange(100, 200), written: 37, blocks: [0x0000_0001]),
            SegmentState(range: ByteRange(200, 300), written: 0, blocks: []),
        ]
        let pieces = Metalink.Pieces(length: 100, digests: [DigestValue(algorithm: .sha256, bytes: [UInt8](repeating: 1, count: 32))])
        record.verifiedPieces = JournalRecord.VerifiedPieces(pieces: pieces, indices: [0])
        return record
    }

    @Test func roundTripsAVersion2RecordWithBlocksAndPieces() throws {
        let bytes = JournalCodec.encode(recordWithBlocks)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("rangefetch-journal 2 sha256:"))
        #expect(text.contains("\"blocks\":\"deadbeef\""), "\(text)")
        #expect(try JournalCodec.decode(bytes) == recordWithBlocks)
    }

    /// Bodies that pass the checksum but must not be used.
    @Test(arguments: [
        ("more blocks than the written bytes hold", #"{"range":{"lower":100,"upper":200},"written":37,"blocks":"0000000100000002"}"#, 4096, 2),
        ("blocks for no written byte", #"{"range":{"lower":100,"upper":200},"written":0,"blocks":"00000001"}"#, 4096, 2),
        ("bad hex", #"{"range":{"lower":100,"upper":200},"written":37,"blocks":"0000000g"}"#, 4096, 2),
        ("hex not 8 digits per block", #"{"range":{"lower":100,"upper":200},"written":37,"blocks":"0001"}"#, 4096, 2),
        ("uppercase hex", #"{"range":{"lower":100,"upper":200},"written":37,"blocks":"DEADBEEF"}"#, 4096, 2),
        ("a block size that is not a power of two", #"{"range":{"lower":100,"upper":200},"written":37}"#, 5000, 2),
        ("blocks in a version 1 journal", #"{"range":{"lower":100,"upper":200},"written":37,"blocks":"00000001"}"#, 0, 1),
    ])
    func rejectsVersion2RecordsThatCannotBeTrue(_ name: String, middle: String, blockBytes: Int64, version: Int) {
        let body = #"{"etag":null,"finalURL":"http://127.0.0.1/a","lastModified":null,"segments":[{"range":{"lower":0,"upper":100},"written":0},"#
            + middle + #",{"range":{"lower":200,"upper":300},"written":0}],"size":300,"url":"http://127.0.0.1/a","#
            + (blockBytes > 0 ? #""blockBytes":\#(blockBytes),"# : "") + #""version":\#(version)}"#
        #expect(throws: JournalCodec.DecodeError.self, "\(name)") { try JournalCodec.decode(Self.framed(body, version: version)) }
    }

    static func framed(_ body: String, version: Int) -> [UInt8] {
        let digest = Digest(.sha256)
        digest.update(Array(body.utf8))
        return Array("rangefetch-journal \(version) sha256:\(digest.finalize().hex)\n\(body)".utf8)
    }

    /// A journal exactly as version 1 wrote it still reads, its segments without block CRCs.
    @Test func readsALiteralVersion1Journal() throws {
        let body = #"{"etag":"\"e1\"","finalURL":"http://127.0.0.1/a","lastModified":"Sun, 22 Nov 2026 10:00:00 GMT","segments":[{"range":{"lower":0,"upper":150},"written":150},{"range":{"lower":150,"upper":300},"written":20}],"size":300,"url":"http://127.0.0.1/a","version":1}"#
        let record = try JournalCodec.decode(Self.framed(body, version: 1))
        #expect(record.version == 1 && record.blockBytes == nil && record.blockGrid == nil)
        #expect(record.segments == [SegmentState(range: ByteRange(0, 150), written: 150), SegmentState(range: ByteRange(150, 300), written: 20)])
        #expect(record.matches(remote.identity))
        // The header's version and the body's must agree.
        #expect(throws: JournalCodec.DecodeError.self) { try JournalCodec.decode(Self.framed(body, version: 2)) }
    }

    @Test func aJournalFromAnotherURLOrVersionDoesNotMatch() {
        var other = remote
        other.url = "http://127.0.0.1/other"
        #expect(!record.matches(other.identity))
        var changed = remote
        changed.etag = "\"e2\""
        #expect(!record.matches(changed.identity))
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
