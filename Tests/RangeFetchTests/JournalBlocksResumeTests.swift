import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The version 2 journal's block CRCs against a real nginx: a forged journal over a zeroed
/// partial file is caught, a killed download records the CRCs of what it wrote and resumes
/// cheaply, a damaged block costs only its segment's tail, and a version 1 journal still resumes.
@Suite(.serialized)
final class JournalBlocksResumeTests: SlowNginxSuite {
    var partial: String { out.file("data.bin.part") }
    var journal: String { out.file("data.bin.part.rfjournal") }
    static let grid = BlockGrid(fileSize: size)

    func bytesServed() -> Int64 {
        usleep(200_000) // let nginx log aborted requests
        return nginx.accessLog().filter { $0.method == "GET" && $0.path.hasSuffix("/data.bin") }.map(\.bytes).reduce(0, +)
    }

    func killAt(fraction: Double) throws {
        let run = try RunningCLI(arguments)
        #expect(run.waitUntilReceived(Int64(Double(Self.size) * fraction)), "never reached \(fraction)")
        run.send(SIGKILL)
        _ = try run.wait()
    }

    func readJournal() throws -> JournalRecord {
        try JournalCodec.decode(Array(Data(contentsOf: URL(fileURLWithPath: journal))))
    }

    func plan(written: (ByteRange) -> Int64) -> [SegmentState] {
        SegmentPlanner(connections: Self.connections, minimumSegmentBytes: 16 << 20).plan(size: Self.size)
            .map { SegmentState(range: $0, written: written($0)) }
    }

    /// A zero-filled partial file of the full size, as a crash or a tool might leave one.
    func zeroPartial() throws {
        #expect(FileManager.default.createFile(atPath: partial, contents: nil))
        #expect(truncate(partial, off_t(Self.size)) == 0)
    }

    func remote() throws -> RemoteFile {
        try Prober(request: RequestOptions(), cancellation: CancellationFlag(), loop: CurlLoop()).probe(url)
    }

    // MARK: Forged journals

    /// A version 2 journal claiming every byte over a zeroed partial file, with the CRCs of the
    /// real bytes (`withCRCs`) or none: no digest is given, yet the bytes are fetched again and
    /// the user is told.
    @Test(arguments: [true, false])
    func aForgedAllWrittenJournalOverZerosIsCaught(withCRCs: Bool) throws {
        try zeroPartial()
        let segments = try plan { $0.count }.map { segment in
            withCRCs ? try Self.withBlocks(segment, of: source) : SegmentState(range: segment.range, written: segment.written, blocks: [])
        }
        try JournalStore(path: journal).write(JournalRecord(file: remote().identity, size: Self.size, segments: segments))
        try nginx.clearAccessLog()
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("its journal claims as written") && result.stderr.contains("fetched again"), "\(result.stderr)")
        #expect(result.stderr.contains(withCRCs ? "blocks differ" : "have no checksum recorded"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        let served = bytesServed()
        #expect(served >= Self.size && served <= Self.size + (1 << 20), "served \(served)")
    }

    /// The same claim in a version 1 journal has no evidence either way: it is taken on trust,
    /// as before (only a digest would catch it; docs/journal-format.md says so).
    @Test func aForgedVersion1JournalIsTakenOnTrust() throws {
        try zeroPartial()
        try Self.writeVersion1(plan { $0.count }, remote: remote(), to: journal)
        try nginx.clearAccessLog()
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(bytesServed() == 0)
        #expect(try Checksums.sha256sum(target) != Checksums.sha256sum(source))
    }

    // MARK: Real interruptions

    @Test func aKilledDownloadRecordsItsBlockCRCsAndResumesCheaply() throws {
        try killAt(fraction: 0.5)
        let record = try readJournal()
        #expect(record.version == 2 && record.blockBytes == Self.grid.blockBytes)
        #expect(record.writtenBytes > 0)
        for segment in record.segments where segment.written > 0 {
            #expect(segment.blocks?.count == Self.grid.blockCount(written: segment.written, of: segment.range), "\(segment.range)")
            #expect(try Self.withBlocks(segment, of: source).blocks == segment.blocks, "\(segment.range)")
        }
        // What the killed run had received and not yet recorded is the kill's, not the resume's:
        // on a loaded machine it grows (CI saw the two runs together serve 1.125x the file).
        try nginx.clearAccessLog()
        let result = try runCLI(["-q"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("fetched again"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        // The resume asks for what the journal does not hold, and at most a block more a segment.
        let missing = Self.size - record.writtenBytes
        let served = bytesServed()
        #expect(served >= missing && served <= missing + Int64(record.segments.count) * Self.grid.blockBytes,
                "served \(served) on resume, \(missing) missing of \(Self.size)")
    }

    /// One damaged 1 MiB block in the middle of a segment's written bytes: that segment is
    /// fetched again from the block on, nothing else it wrote.
    @Test func aDamagedBlockCostsOnlyItsSegmentsTail() throws {
        try killAt(fraction: 0.6)
        let record = try readJournal()
        let segment = try #require(record.segments.max { $0.written < $1.written })
        #expect(segment.written >= 4 * Self.grid.blockBytes, "\(segment)")
        let damaged = Self.grid.block(2, of: segment.range)
        let handle = try #require(FileHandle(forWritingAtPath: partial))
        try handle.seek(toOffset: UInt64(damaged.lower))
        handle.write(Data((0..<Int(damaged.count)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }))
        try handle.close()
        try nginx.clearAccessLog()
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        let refused = segment.range.lower + segment.written - damaged.lower
        #expect(result.stderr.contains("1 block differ"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        let expected = Self.size - record.writtenBytes + refused
        let served = bytesServed()
        #expect(served >= expected && served <= expected + (1 << 20), "served \(served), expected \(expected)")
    }

    /// A journal exactly as version 1 wrote it (half of the file written) resumes, refetching
    /// none of the bytes it claims.
    @Test func aLiteralVersion1JournalStillResumes() throws {
        let half = Self.size / 2
        let copy = try TestProcess.run("/bin/sh", ["-c", "head -c \(half) '\(source)' > '\(partial)'"])
        #expect(copy.status == 0)
        #expect(truncate(partial, off_t(Self.size)) == 0)
        try Self.writeVersion1(plan { min($0.count, max(0, half - $0.lower)) }, remote: remote(), to: journal)
        try nginx.clearAccessLog()
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("starting over"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
        let served = bytesServed()
        #expect(served >= Self.size - half && served <= Self.size - half + (1 << 20), "served \(served)")
    }

    // MARK: Helpers

    /// `segment` with the CRCs of its written blocks as they are in the file at `path`.
    static func withBlocks(_ segment: SegmentState, of path: String, grid: BlockGrid = grid) throws -> SegmentState {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let blocks = (0..<grid.blockCount(written: segment.written, of: segment.range)).map { index in
            let block = grid.coveredBlock(index, written: segment.written, of: segment.range)
            return data.withUnsafeBytes { CRC32C.update(0, UnsafeRawBufferPointer(rebasing: $0[Int(block.lower)..<Int(block.upper)])) }
        }
        return SegmentState(range: segment.range, written: segment.written, blocks: blocks)
    }

    /// Writes `segments` as a version 1 journal would have, text for text.
    static func writeVersion1(_ segments: [SegmentState], remote: RemoteFile, to path: String) throws {
        func quoted(_ text: String?) -> String {
            text.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" } ?? "null"
        }
        let list = segments.map { #"{"range":{"lower":\#($0.range.lower),"upper":\#($0.range.upper)},"written":\#($0.written)}"# }
        let body = #"{"etag":\#(quoted(remote.etag)),"finalURL":\#(quoted(remote.url)),"lastModified":\#(quoted(remote.lastModified)),"segments":[\#(list.joined(separator: ","))],"size":\#(remote.size ?? 0),"url":\#(quoted(remote.url)),"version":1}"#
        let digest = Digest(.sha256)
        digest.update(Array(body.utf8))
        try Data("rangefetch-journal 1 sha256:\(digest.finalize().hex)\n\(body)".utf8).write(to: URL(fileURLWithPath: path))
    }
}

extension JournalBlocksResumeTests {
    /// Work stealing cuts segments mid-block: the tails start with a short block, and every
    /// CRC recorded matches the source's bytes.
    @Test func splitSegmentsRecordTheirCRCsToo() throws {
        // Segment 0 nearly done, the others barely begun: its connection steals from the others.
        // Each of those has an odd 12,345 bytes written, so a split halfway through what is left
        // cannot land on a block boundary (from nothing written, halves of 16 MiB would).
        let done = 15 << 20
        let started: Int64 = 12_345
        let copy = try TestProcess.run("/bin/sh", ["-c", "head -c \(done) '\(source)' > '\(partial)'"])
        #expect(copy.status == 0)
        #expect(truncate(partial, off_t(Self.size)) == 0)
        let segments = try plan { $0.lower == 0 ? Int64(done) : started }.map { try Self.withBlocks($0, of: source) }
        for segment in segments where segment.range.lower > 0 {
            let head = try TestProcess.run("/bin/dd", ["if=\(source)", "of=\(partial)", "bs=\(started)", "count=1", "conv=notrunc",
                                                       "iflag=skip_bytes", "oflag=seek_bytes",
                                                       "skip=\(segment.range.lower)", "seek=\(segment.range.lower)"])
            #expect(head.status == 0)
        }
        try JournalStore(path: journal).write(JournalRecord(file: remote().identity, size: Self.size, segments: segments))
        let run = try RunningCLI([url, "-o", target, "-n", "\(Self.connections)", "--min-segment", "1M"])
        #expect(run.waitUntilReceived(Int64(Double(Self.size) * 0.7)))
        run.send(SIGKILL)
        _ = try run.wait()
        let record = try readJournal()
        print("segments after the kill: \(record.segments.map { "\($0.range.lower)+\($0.written)/\($0.range.count)" })")
        #expect(record.segments.contains { $0.range.lower % Self.grid.blockBytes != 0 }, "no segment was cut mid-block")
        for segment in record.segments where segment.written > 0 {
            #expect(segment.blocks?.count == Self.grid.blockCount(written: segment.written, of: segment.range), "\(segment.range)")
            #expect(try Self.withBlocks(segment, of: source).blocks == segment.blocks, "\(segment.range)")
        }
        let result = try runCLI(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("fetched again"), "\(result.stderr)")
        #expect(try Checksums.sha256sum(target) == Checksums.sha256sum(source))
    }
}
