import Testing
@testable import RangeFetch

struct JournalCodecTests {
    let remote = RemoteFile(url: "http://127.0.0.1/a", redirectedTo: "http://127.0.0.1/b", size: 300, acceptsRanges: true,
                            etag: "\"e1\"", lastModified: "Sun, 22 Nov 2026 10:00:00 GMT", suggestedName: "a",
                            advertisedDigests: [])

    var record: JournalRecord {
        JournalRecord(remote: remote, size: 300, segments: [
            SegmentState(range: ByteRange(0, 100), written: 100),
            SegmentState(range: ByteRange(100, 200), written: 37),
            SegmentState(range: ByteRange(200, 300), written: 0),
        ])
    }

    @Test func roundTripsARecord() throws {
        let decoded = try JournalCodec.decode(JournalCodec.encode(record))
        #expect(decoded == record)
        #expect(decoded.writtenBytes == 137)
        #expect(decoded.matches(remote))
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
        text = text.replacingFirst("rangefetch-journal 1", with: "rangefetch-journal 9")
        #expect(throws: JournalCodec.DecodeError.unsupportedVersion(9)) { try JournalCodec.decode(Array(text.utf8)) }
    }

    @Test func rejectsSegmentsThatDoNotCoverTheFile() {
        var broken = record
        broken.segments.removeLast()
        #expect(throws: JournalCodec.DecodeError.self) { try JournalCodec.decode(JournalCodec.encode(broken)) }
    }

    @Test func aJournalFromAnotherURLOrVersionDoesNotMatch() {
        var other = remote
        other.url = "http://127.0.0.1/other"
        #expect(!record.matches(other))
        var changed = remote
        changed.etag = "\"e2\""
        #expect(!record.matches(changed))
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
