/// The cyclic redundancy checks S3 stores beside objects: CRC-32 (zlib's, ISO-HDLC), CRC-32C
/// (Castagnoli, iSCSI) and CRC-64/NVME. All three are reflected, start and end with all bits
/// set, and are reported big-endian (as S3's `x-amz-checksum-*` headers carry them).
///
/// Computed with slicing-by-8 tables (eight bytes per step), checked against the catalogue's
/// check values (the CRC of `123456789`). Not thread-safe; one value per stream.
package struct CRC {
    /// Which check.
    package enum Kind: Sendable {
        case crc32, crc32c, crc64nvme

        /// The reflected polynomial.
        package var polynomial: UInt64 {
            switch self {
            case .crc32: 0xEDB8_8320
            case .crc32c: 0x82F6_3B78
            case .crc64nvme: 0x9A6C_9329_AC4B_C9B5
            }
        }

        /// Width in bytes.
        package var byteCount: Int { self == .crc64nvme ? 8 : 4 }

        /// All bits of the width set (the initial value and the final xor).
        package var ones: UInt64 { self == .crc64nvme ? .max : 0xFFFF_FFFF }
    }

    package let kind: Kind
    private var state: UInt64

    package init(_ kind: Kind) {
        self.kind = kind
        self.state = kind.ones
    }

    /// Adds `bytes`.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        switch kind {
        case .crc32: state = UInt64(Self.update32(UInt32(truncatingIfNeeded: state), bytes, Self.crc32Table))
        case .crc32c: state = UInt64(Self.update32(UInt32(truncatingIfNeeded: state), bytes, Self.crc32cTable))
        case .crc64nvme: state = Self.update64(state, bytes, Self.crc64nvmeTable)
        }
    }

    /// The check value so far.
    package var value: UInt64 { state ^ kind.ones }

    /// The check value's bytes, big-endian.
    package var bytes: [UInt8] {
        let value = self.value
        return (0..<kind.byteCount).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    // MARK: Tables (8 × 256 entries: entry k·256+n is the CRC of byte n followed by k zero bytes)

    package static let crc32Table: [UInt32] = table(.crc32).map { UInt32(truncatingIfNeeded: $0) }
    package static let crc32cTable: [UInt32] = table(.crc32c).map { UInt32(truncatingIfNeeded: $0) }
    package static let crc64nvmeTable: [UInt64] = table(.crc64nvme)

    package static func table(_ kind: Kind) -> [UInt64] {
        var table = [UInt64](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt64(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ kind.polynomial : crc >> 1 }
            table[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = table[(slice - 1) * 256 + byte]
                table[slice * 256 + byte] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        return table
    }

    // MARK: Slicing-by-8

    private static func update32(_ start: UInt32, _ bytes: UnsafeRawBufferPointer, _ table: [UInt32]) -> UInt32 {
        table.withUnsafeBufferPointer { t in
            var crc = start
            var index = 0
            let count = bytes.count
            while count - index >= 8 {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let low = UInt32(truncatingIfNeeded: word) ^ crc
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(bytes[index])) & 0xFF)]
                index += 1
            }
            return crc
        }
    }

    private static func update64(_ start: UInt64, _ bytes: UnsafeRawBufferPointer, _ table: [UInt64]) -> UInt64 {
        table.withUnsafeBufferPointer { t in
            var crc = start
            var index = 0
            let count = bytes.count
            while count - index >= 8 {
                crc ^= UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                crc = t[7 * 256 + Int(crc & 0xFF)] ^ t[6 * 256 + Int((crc >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((crc >> 16) & 0xFF)] ^ t[4 * 256 + Int((crc >> 24) & 0xFF)]
                    ^ t[3 * 256 + Int((crc >> 32) & 0xFF)] ^ t[2 * 256 + Int((crc >> 40) & 0xFF)]
                    ^ t[1 * 256 + Int((crc >> 48) & 0xFF)] ^ t[Int(crc >> 56)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt64(bytes[index])) & 0xFF)]
                index += 1
            }
            return crc
        }
    }
}
