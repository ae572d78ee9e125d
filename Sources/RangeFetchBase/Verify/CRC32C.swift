import CFileShims

/// CRC-32C (Castagnoli) through the C shim: the SSE4.2 `crc32` instruction where the CPU has it
/// (several GB/s), else a table. The same check value as ``CRC`` with `.crc32c`; this one is for
/// the hot path, where the resume journal's block digests are computed as bytes arrive.
package enum CRC32C {
    /// The CRC of the bytes covered by `crc` (0: none) followed by `bytes`.
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return cfs_crc32c(crc, base, bytes.count)
    }

    /// The same with the table alone (tests compare the two).
    package static func updateInSoftware(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return cfs_crc32c_software(crc, base, bytes.count)
    }

    /// Whether ``update(_:_:)`` uses the CPU's instruction.
    package static var usesHardware: Bool { cfs_crc32c_hardware() != 0 }
}
