import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The one descriptor type for raw I/O: reads at the file's end, read-backs of ranges that
/// span it, writes of every byte, and calls a real signal interrupts, made again.
@Suite(.serialized)
struct FileDescriptorTests {
    /// A file of `size` bytes, byte `i` being `i % 251`, opened read-only.
    static func patterned(_ directory: TemporaryDirectory, size: Int) throws -> FileDescriptor {
        let path = directory.file("pattern.bin")
        try Data((0..<size).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: path))
        return try FileDescriptor.open(path, O_RDONLY | O_CLOEXEC)
    }

    static func pattern(_ range: Range<Int>) -> [UInt8] { range.map { UInt8($0 % 251) } }

    struct ReadBackCase: Sendable, CustomTestStringConvertible {
        var size: Int
        var range: ByteRange
        var buffer: Int
        /// Chunks handed on before `stop()` says stop (`nil`: never).
        var stopAfter: Int? = nil
        /// Offsets and lengths of the chunks handed on.
        var chunks: [(Int64, Int)]
        var reached: Int64
        var testDescription: String { "file \(size), range \(range), buffer \(buffer), stop after \(stopAfter.map(String.init) ?? "-")" }
    }

    static let readBackCases: [ReadBackCase] = [
        ReadBackCase(size: 10, range: ByteRange(0, 10), buffer: 4, chunks: [(0, 4), (4, 4), (8, 2)], reached: 10),
        ReadBackCase(size: 10, range: ByteRange(0, 8), buffer: 4, chunks: [(0, 4), (4, 4)], reached: 8),
        ReadBackCase(size: 10, range: ByteRange(3, 20), buffer: 4, chunks: [(3, 4), (7, 3)], reached: 10),
        ReadBackCase(size: 10, range: ByteRange(0, Int64.max), buffer: 16, chunks: [(0, 10)], reached: 10),
        ReadBackCase(size: 10, range: ByteRange(10, 20), buffer: 4, chunks: [], reached: 10),
        ReadBackCase(size: 10, range: ByteRange(12, 20), buffer: 4, chunks: [], reached: 12),
        ReadBackCase(size: 10, range: ByteRange(5, 5), buffer: 4, chunks: [], reached: 5),
        ReadBackCase(size: 0, range: ByteRange(0, 5), buffer: 4, chunks: [], reached: 0),
        ReadBackCase(size: 10, range: ByteRange(0, 10), buffer: 4, stopAfter: 1, chunks: [(0, 4)], reached: 4),
        ReadBackCase(size: 10, range: ByteRange(0, 10), buffer: 4, stopAfter: 0, chunks: [], reached: 0),
        ReadBackCase(size: (1 << 20) + 1, range: ByteRange(1, Int64.max), buffer: 1 << 20, chunks: [(1, 1 << 20)], reached: (1 << 20) + 1),
    ]

    @Test(arguments: readBackCases)
    func readBackHandsOnEveryByteOfTheRangeTheFileHolds(_ test: ReadBackCase) throws {
        let directory = try TemporaryDirectory("rf-fd")
        let file = try Self.patterned(directory, size: test.size)
        defer { file.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: test.buffer, alignment: 1)
        defer { buffer.deallocate() }
        var chunks: [(Int64, Int)] = []
        var bytes: [UInt8] = []
        let reached = try file.readBack(test.range, into: buffer, until: { test.stopAfter.map { chunks.count >= $0 } ?? false }) { offset, chunk in
            chunks.append((offset, chunk.count))
            bytes += chunk
        }
        #expect(reached == test.reached)
        #expect(chunks.map(\.0) == test.chunks.map(\.0))
        #expect(chunks.map(\.1) == test.chunks.map(\.1))
        #expect(bytes == Self.pattern(Int(test.range.lower)..<Int(reached)))
    }

    @Test func readBackStopsAtWhatTheClosureThrows() throws {
        let directory = try TemporaryDirectory("rf-fd")
        let file = try Self.patterned(directory, size: 10)
        defer { file.close() }
        FileDescriptor.withReadBackBuffer { buffer in
            var calls = 0
            let error = #expect(throws: SystemCallError.self) {
                try file.readBack(ByteRange(0, 10), into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<3])) { (_, _) throws(SystemCallError) in
                    calls += 1
                    if calls == 2 { throw SystemCallError(function: "pwrite", path: "elsewhere", errno: ENOSPC) }
                }
            }
            #expect(calls == 2)
            #expect(error?.errno == ENOSPC)
        }
    }

    @Test(arguments: [(10, 0, 10), (10, 4, 6), (10, 9, 1), (10, 10, 0), (10, 11, 0)])
    func aReadAtTheEndIsShortThenEmpty(size: Int, offset: Int64, expected: Int) throws {
        let directory = try TemporaryDirectory("rf-fd")
        let file = try Self.patterned(directory, size: size)
        defer { file.close() }
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = try bytes.withUnsafeMutableBytes { try file.read(fromAbsoluteOffset: offset, into: $0) }
        #expect(count == expected)
        #expect(Array(bytes.prefix(count)) == Self.pattern(Int(offset)..<Int(offset) + expected))
    }

    @Test(arguments: [0, 1, (64 << 10) - 1, 64 << 10, (64 << 10) + 1, 200_000], [0, 1, 64 << 10, 100_000, 1 << 20])
    func readUpToALimitTakesTheFileOrTheLimit(size: Int, limit: Int) throws {
        let directory = try TemporaryDirectory("rf-fd")
        let file = try Self.patterned(directory, size: size)
        defer { file.close() }
        #expect(try file.read(upTo: limit) == Self.pattern(0..<min(size, limit)))
    }

    @Test func writeToAnAbsoluteOffsetWritesEveryByteThere() throws {
        let directory = try TemporaryDirectory("rf-fd")
        let path = directory.file("written.bin")
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
        defer { file.close() }
        let bytes = Self.pattern(0..<(3 << 20) + 7)
        try bytes.withUnsafeBytes { raw in try file.write(toAbsoluteOffset: 5, raw) }
        try file.synchronize()
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(written.count == bytes.count + 5)
        #expect(written.prefix(5).allSatisfy { $0 == 0 })
        #expect(Array(written.dropFirst(5)) == bytes)
        #expect(try file.status().st_size == off_t(bytes.count + 5))
    }

    @Test func aFailedCallNamesTheCallThePathAndTheErrno() throws {
        let pipe = try TestPipe()
        let error = #expect(throws: SystemCallError.self) {
            try [UInt8](repeating: 1, count: 4).withUnsafeBytes { raw in
                try FileDescriptor(pipe.writeEnd, path: "the pipe").write(toAbsoluteOffset: 0, raw)
            }
        }
        #expect(error?.function == "pwrite")
        #expect(error?.errno == ESPIPE)
        #expect(error?.description == "pwrite the pipe: \(String(cString: strerror(ESPIPE)))")
    }

    // MARK: - Interrupted by a real signal

    /// The harness itself: without the funnel, the same signal makes a blocked `read` fail with
    /// `EINTR` and cuts a blocked `write` short. Otherwise the tests below would prove nothing.
    @Test func withoutTheFunnelTheSignalEndsAReadWithEINTRAndCutsAWriteShort() throws {
        try SignalWithoutRestart.during {
            let reading = try TestPipe()
            let read = InterruptedCall { () -> (Int, Int32) in
                var byte: UInt8 = 0
                let count = Glibc.read(reading.readEnd, &byte, 1)
                return (count, errno)
            }
            try read.waitUntilBlocked(in: .read)
            try read.interrupt()
            let (count, error) = try read.result()
            #expect(count == -1)
            #expect(error == EINTR)

            let writing = try TestPipe()
            let bytes = Self.pattern(0..<(1 << 20))
            let write = InterruptedCall { () -> Int in
                bytes.withUnsafeBytes { Glibc.write(writing.writeEnd, $0.baseAddress, $0.count) }
            }
            try write.waitUntilBlocked(in: .write)
            try write.interrupt()
            let written = try write.result()
            #expect(written > 0 && written < bytes.count, "a blocked write the signal interrupts returns what it moved")
        }
    }

    @Test func aReadASignalInterruptsIsMadeAgainAndReturnsTheData() throws {
        try SignalWithoutRestart.during {
            let pipe = try TestPipe()
            let input = FileDescriptor(pipe.readEnd, path: "the pipe")
            let read = InterruptedCall { () -> Result<[UInt8], SystemCallError> in
                var bytes = [UInt8](repeating: 0, count: 16)
                return Result { () throws(SystemCallError) in
                    let count = try bytes.withUnsafeMutableBytes { raw in
                        Result { () throws(SystemCallError) in try input.read(into: raw) }
                    }.get()
                    return Array(bytes.prefix(count))
                }
            }
            try read.waitUntilBlocked(in: .read)
            try read.interruptAndWaitUntilBlockedAgain(in: .read)
            try read.interruptAndWaitUntilBlockedAgain(in: .read)
            try FileDescriptor(pipe.writeEnd, path: "the pipe").writeAll(Array("after".utf8))
            #expect(try read.result().get() == Array("after".utf8))
        }
    }

    @Test func aWriteASignalCutsShortGoesOnUntilEveryByteIsWritten() throws {
        try SignalWithoutRestart.during {
            let pipe = try TestPipe()
            let output = FileDescriptor(pipe.writeEnd, path: "the pipe")
            // Many times a pipe's 64 KiB: the write blocks with most of it still to go.
            let bytes = Self.pattern(0..<(1 << 20) + 3)
            let write = InterruptedCall { () -> Result<Void, SystemCallError> in
                Result { () throws(SystemCallError) in try output.writeAll(bytes) }
            }
            try write.waitUntilBlocked(in: .write)
            try write.interruptAndWaitUntilBlockedAgain(in: .write)
            try write.interruptAndWaitUntilBlockedAgain(in: .write)
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let input = FileDescriptor(pipe.readEnd, path: "the pipe")
            while received.count < bytes.count {
                let count = try chunk.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemCallError) in try input.read(into: raw) }
                }.get()
                guard count > 0 else { break }
                received += chunk.prefix(count)
            }
            try write.result().get()
            #expect(received == bytes)
        }
    }

    @Test func aWaitASignalInterruptsIsMadeAgainUntilTheBytesCome() throws {
        try SignalWithoutRestart.during {
            let pipe = try TestPipe()
            let input = FileDescriptor(pipe.readEnd, path: "the pipe")
            let wait = InterruptedCall { () -> Result<Bool, SystemCallError> in
                Result { () throws(SystemCallError) in try input.wait(for: POLLIN, milliseconds: -1) }
            }
            try wait.waitUntilBlocked(in: .poll)
            try wait.interruptAndWaitUntilBlockedAgain(in: .poll)
            try FileDescriptor(pipe.writeEnd, path: "the pipe").writeAll([1])
            #expect(try wait.result().get())
        }
    }
}
