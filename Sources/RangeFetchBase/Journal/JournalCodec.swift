import FoundationEssentials

/// Turns a ``JournalRecord`` into bytes and back, refusing anything torn or tampered with.
///
/// Layout: one header line `rangefetch-journal <version> sha256:<hex of body>` then the body,
/// a JSON object. A truncated write, a flipped bit or a foreign file fails the checksum.
package enum JournalCodec {
    package static let magic = "rangefetch-journal"

    package enum DecodeError: Error, Equatable, CustomStringConvertible {
        case notAJournal
        case unsupportedVersion(Int)
        case checksumMismatch
        case malformed(String)

        package var description: String {
            switch self {
            case .notAJournal: "not a rangefetch journal"
            case .unsupportedVersion(let version): "journal version \(version) is not supported"
            case .checksumMismatch: "journal checksum does not match (torn or damaged write)"
            case .malformed(let detail): "malformed journal: \(detail)"
            }
        }
    }

    package static func encode(_ record: JournalRecord) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain value types cannot fail.
        let body = (try? encoder.encode(record)).map { Array($0) } ?? []
        let digest = Digest(.sha256)
        digest.update(body)
        let header = "\(magic) \(record.version) sha256:\(digest.finalize().hex)\n"
        return Array(header.utf8) + body
    }

    package static func decode(_ bytes: [UInt8]) throws(DecodeError) -> JournalRecord {
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { throw .notAJournal }
        let header = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ")
        guard header.count == 3, header[0] == magic, header[2].hasPrefix("sha256:") else { throw .notAJournal }
        guard let version = Int(header[1]) else { throw .notAJournal }
        guard JournalRecord.readableVersions.contains(version) else { throw .unsupportedVersion(version) }
        let body = Array(bytes[(newline + 1)...])
        let digest = Digest(.sha256)
        digest.update(body)
        guard digest.finalize().hex == header[2].dropFirst("sha256:".count) else { throw .checksumMismatch }
        let record: JournalRecord
        do {
            record = try JSONDecoder().decode(JournalRecord.self, from: Data(body))
        } catch {
            throw .malformed("\(error)")
        }
        guard record.size >= 0, record.segments.coversExactly(size: record.size),
              record.segments.allSatisfy({ $0.written >= 0 && $0.written <= $0.range.count }) else {
            throw .malformed("segments do not cover the file exactly")
        }
        guard record.version == version else { throw .malformed("the header says version \(version), the body \(record.version)") }
        if version == 1 {
            // Version 1 had no block CRCs: anything of the kind is not taken from it.
            guard record.blockBytes == nil, record.verifiedPieces == nil, record.segments.allSatisfy({ $0.blocks == nil }) else {
                throw .malformed("a version 1 journal with version 2 fields")
            }
            return record
        }
        guard let blockBytes = record.blockBytes, BlockGrid.isValid(blockBytes: blockBytes) else {
            throw .malformed("blockBytes must be a power of two from 4096")
        }
        let grid = BlockGrid(blockBytes: blockBytes)
        for segment in record.segments where (segment.blocks?.count ?? 0) > grid.blockCount(written: segment.written, of: segment.range) {
            throw .malformed("segment \(segment.range.httpRangeSpec) lists more blocks than its \(segment.written) written bytes hold")
        }
        if let pieces = record.verifiedPieces,
           pieces.length <= 0 || pieces.runs.contains(where: { $0.count != 2 || $0[0] < 0 || $0[0] >= $0[1] }) {
            throw .malformed("verifiedPieces must be runs [first, end) of piece indices")
        }
        return record
    }
}
