import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The CRC-32C of the journal's blocks (``CRC32C``, the C shim): the SSE4.2 path and the table
/// path agree with each other, with ``CRC`` and with the published check values, at every
/// length and start alignment, and when continued piece by piece.
struct CRC32CTests {
    static let vectors: [([UInt8], UInt32)] = [
        (Array("123456789".utf8), 0xE306_9283),
        ([], 0),
        // RFC 3720 B.4.
        ([UInt8](repeating: 0, count: 32), 0x8A91_36AA),
        ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
        ((0..<32).map { UInt8($0) }, 0x46DD_794E),
        ((0..<32).reversed().map { UInt8($0) }, 0x113F_DB5C),
    ]

    @Test(arguments: vectors)
    func matchesPublishedVectorsInHardwareAndSoftware(input: [UInt8], expected: UInt32) {
        input.withUnsafeBytes { bytes in
            #expect(CRC32C.update(0, bytes) == expected)
            #expect(CRC32C.updateInSoftware(0, bytes) == expected)
        }
    }

    @Test func thisMachineUsesTheInstruction() {
        // The build machines have SSE4.2; elsewhere the table path is what the other tests prove.
        #if arch(x86_64)
        #expect(CRC32C.usesHardware)
        #endif
    }

    /// Every length from 0 to 70 at every start offset 0...15 (the instruction path's unaligned
    /// head, eight-byte body and tail), against the software path and ``CRC``.
    @Test func oddLengthsAndMisalignedStartsAgree() {
        let data = (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) }
        data.withUnsafeBytes { all in
            for start in 0..<16 {
                for length in 0...70 {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                    var reference = CRC(.crc32c)
                    reference.update(slice)
                    let hardware = CRC32C.update(0, slice)
                    #expect(hardware == CRC32C.updateInSoftware(0, slice), "start \(start) length \(length)")
                    #expect(UInt64(hardware) == reference.value, "start \(start) length \(length)")
                }
            }
        }
    }

    @Test func continuingPieceByPieceEqualsOnePass() {
        let data = (0..<(3 << 20) + 13).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 9)) }
        data.withUnsafeBytes { all in
            let whole = CRC32C.update(0, all)
            var pieces: UInt32 = 0
            var offset = 0
            var step = 1
            while offset < all.count {
                let end = min(all.count, offset + step)
                pieces = CRC32C.update(pieces, UnsafeRawBufferPointer(rebasing: all[offset..<end]))
                offset = end
                step = step * 3 + 1
            }
            #expect(pieces == whole)
            var reference = CRC(.crc32c)
            reference.update(all)
            #expect(UInt64(whole) == reference.value)
        }
    }
}
