import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The batch journal's record line: what decodes, and every damage that must not.
struct BatchRecordTests {
    static let record = BatchRecord(
        key: BatchKey(url: "https://user:secret@example.com/a.bin?X-Amz-Signature=abc", path: "out/a.bin", checksums: []),
        stamp: FileStamp(size: 4096, modifiedNanoseconds: 1_700_000_000_123_456_789, changedNanoseconds: 1_700_000_001_000_000_000,
                         inode: 1234567, device: 2049),
        details: .init(url: Redaction.url("https://user:secret@example.com/a.bin?X-Amz-Signature=abc"), path: "out/a\nb c.bin",
                       etag: "\"abc\"", lastModified: "Tue, 01 Oct 2024 10:00:00 GMT", digests: ["sha256=00ff"]))

    /// The line without its newline.
    static var line: [UInt8] { Array(record.line.dropLast()) }

    @Test func aRecordDecodesToItself() {
        #expect(BatchRecord.decode(Self.line[...]) == Self.record)
        #expect(BatchRecord.decodeStamp(Self.line[...])?.0 == Self.record.key)
        #expect(BatchRecord.decodeStamp(Self.line[...])?.1 == Self.record.stamp)
    }

    /// The details are written by hand: byte for byte what `JSONEncoder` (keys sorted, slashes
    /// kept) writes, for names with quotes, controls, non-ASCII and absent fields.
    @Test(arguments: [
        BatchRecord.Details(url: "http://h/a\"b\\c", path: "d/\u{1}\u{8}\u{C}\u{1F}\t\r\n\u{7F}é日本😀\u{2028}", etag: nil, lastModified: nil, digests: []),
        BatchRecord.Details(url: "https://h/x", path: "p", etag: "W/\"x\"", lastModified: nil, digests: ["sha256=00", "md5=ff"]),
        BatchRecord.Details(url: "", path: "", etag: nil, lastModified: "Tue, 01 Oct 2024", digests: ["a"]),
    ])
    func detailsAreWhatJSONEncoderWrites(_ details: BatchRecord.Details) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(details.json == String(decoding: try encoder.encode(details), as: UTF8.self))
        #expect(try JSONDecoder().decode(BatchRecord.Details.self, from: Data(details.json.utf8)) == details)
    }

    /// The line is built in one buffer: byte for byte the line as the format says, built from
    /// strings, for keys and numbers at their extremes and details that need escaping.
    @Test(arguments: [
        record,
        BatchRecord(key: BatchKey(high: 0, low: 1), stamp: FileStamp(size: 0, modifiedNanoseconds: -1, changedNanoseconds: 0, inode: 0, device: 0),
                    details: .init(url: "", path: "", etag: nil, lastModified: nil, digests: [])),
        BatchRecord(key: BatchKey(high: .max, low: 0x0123_4567_89ab_cdef),
                    stamp: FileStamp(size: .max, modifiedNanoseconds: .min, changedNanoseconds: .max, inode: .max, device: .max),
                    details: .init(url: "http://h/\u{1}\"", path: "é日本😀", etag: "W/\"x\"", lastModified: nil, digests: ["md5=ff", "sha256=00"])),
    ])
    func theLineIsTheFormatsLine(_ record: BatchRecord) {
        func hex(_ word: UInt64) -> String {
            let digits = String(word, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        let stamp = record.stamp
        let rest = Array("rfb1 \(hex(record.key.high))\(hex(record.key.low)) \(stamp.size) \(stamp.modifiedNanoseconds) \(stamp.changedNanoseconds) \(stamp.inode) \(stamp.device) \(record.details.json)".utf8)
        let digest = Digest(.sha256)
        digest.update(rest)
        #expect(record.line == Array(digest.finalize().hex.utf8) + [UInt8(ascii: " ")] + rest + [UInt8(ascii: "\n")])
        #expect(record.key.hex == hex(record.key.high) + hex(record.key.low))
        #expect(BatchRecord.decode(record.line.dropLast()) == record)
    }

    @Test func aRecordIsOneLineWithoutSecrets() {
        let text = String(decoding: Self.record.line, as: UTF8.self)
        #expect(text.filter { $0 == "\n" }.count == 1 && text.hasSuffix("\n"))
        #expect(!text.contains("secret") && !text.contains("abc&") && !text.contains("Signature=abc"), "\(text)")
    }

    static let damages: [(String, @Sendable ([UInt8]) -> [UInt8])] = [
        ("torn at the end", { Array($0.dropLast(10)) }),
        ("torn inside the fixed fields", { Array($0.prefix(90)) }),
        ("only the checksum", { Array($0.prefix(64)) }),
        ("empty", { _ in [] }),
        ("a size changed", { line in
            let text = String(decoding: line, as: UTF8.self).replacingOccurrences(of: " 4096 ", with: " 4097 ")
            return Array(text.utf8)
        }),
        ("a bit flipped in the details", { line in var line = line; line[line.count - 5] ^= 1; return line }),
        ("a bit flipped in the checksum", { line in var line = line; line[3] ^= 1; return line }),
        ("another tag", { line in
            // A well-formed line of another version: its checksum is right, its tag is not ours.
            let rest = Array(String(decoding: line[65...], as: UTF8.self).replacingOccurrences(of: "rfb1 ", with: "rfb9 ").utf8)
            let digest = Digest(.sha256)
            digest.update(rest)
            return Array(digest.finalize().hex.utf8) + [UInt8(ascii: " ")] + rest
        }),
    ]

    @Test(arguments: damages.map(\.0)) func aDamagedLineIsNeverTrusted(_ damage: String) throws {
        let damaged = try #require(Self.damages.first { $0.0 == damage }).1(Self.line)
        #expect(BatchRecord.decodeStamp(damaged[...]) == nil)
        #expect(BatchRecord.decode(damaged[...]) == nil)
    }

    @Test func theKeyTellsURLPathAndDigestsApart() throws {
        let sha = try #require(DigestValue(algorithm: .sha256, hex: String(repeating: "ab", count: 32)))
        let keys = [
            BatchKey(url: "http://127.0.0.1/a.bin", path: "d/a.bin", checksums: []),
            BatchKey(url: "http://127.0.0.1/a.bin?v=2", path: "d/a.bin", checksums: []),
            BatchKey(url: "http://127.0.0.1/a.bin", path: "d/b.bin", checksums: []),
            BatchKey(url: "http://127.0.0.1/a.bin", path: "d/a.bin", checksums: [sha]),
            // The separator keeps the URL and the path apart.
            BatchKey(url: "http://127.0.0.1/a.bin\u{0}d", path: "a.bin", checksums: []),
        ]
        #expect(Set(keys).count == keys.count)
        #expect(BatchKey(url: "http://127.0.0.1/a.bin", path: "d/a.bin", checksums: []) == keys[0])
        #expect(BatchKey(hex: Substring(keys[3].hex)) == keys[3])
    }
}
