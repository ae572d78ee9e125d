import RangeFetchBase

/// libcurl's small chunks gathered into one buffer of the ``BufferPool`` for one `pwrite`: the
/// gathered bytes begin at their file offset modulo the direct-write alignment, so every aligned
/// file offset sits at an aligned address.
package struct GatherBuffer {
    package private(set) var memory: UnsafeMutableRawBufferPointer
    /// Where the gathered bytes begin in ``memory``.
    package private(set) var start = 0
    /// How many bytes are gathered.
    package private(set) var count = 0

    /// `memory` to gather the bytes landing from file offset `offset` on.
    package init(_ memory: UnsafeMutableRawBufferPointer, offset: Int64) {
        self.memory = memory
        start = Int(offset % Int64(PartialFile.directAlignment))
    }

    package var isFull: Bool { start + count == memory.count }

    /// Copies as much of `bytes` as fits; returns how many.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let taken = min(bytes.count, memory.count - start - count)
        (memory.baseAddress! + start + count).copyMemory(from: bytes.baseAddress!, byteCount: taken)
        count += taken
        return taken
    }
}
