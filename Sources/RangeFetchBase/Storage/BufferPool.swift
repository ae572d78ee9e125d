import Synchronization

/// The engine's write buffers: each a flush's worth plus one alignment unit, aligned for direct
/// writes. Buffers go out to transfers, on to the ``WriteQueue``, whose lanes give them back as
/// soon as their write is done; the pool keeps them for reuse and frees them when it goes.
/// There are never more than the transfers plus the writes in flight.
package final class BufferPool: Sendable {
    /// Bytes a buffer holds before it is flushed.
    package let flushBytes: Int
    private let buffers = Mutex<(spare: [Buffer], all: [Buffer])>(([], []))

    private struct Buffer: @unchecked Sendable {
        var pointer: UnsafeMutableRawBufferPointer
    }

    package init(flushBytes: Int) {
        self.flushBytes = flushBytes
    }

    deinit {
        buffers.withLock { for buffer in $0.all { buffer.pointer.deallocate() } }
    }

    /// A buffer to fill: a returned one, or a new one.
    package func take() -> UnsafeMutableRawBufferPointer {
        if let buffer = buffers.withLock({ $0.spare.popLast() }) { return buffer.pointer }
        // One alignment unit more than a flush, so the buffered bytes can start at the file
        // offset's place within a block (see ``SegmentTransfer``).
        let pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: flushBytes + PartialFile.directAlignment,
                                                             alignment: PartialFile.directAlignment)
        buffers.withLock { $0.all.append(Buffer(pointer: pointer)) }
        return pointer
    }

    /// Takes a buffer back once nothing reads or writes it any more; safe from any thread.
    package func give(_ pointer: UnsafeMutableRawBufferPointer) {
        buffers.withLock { $0.spare.append(Buffer(pointer: pointer)) }
    }

    /// Buffers taken and not given back yet (0 once every user is done with the pool).
    package var buffersOut: Int { buffers.withLock { $0.all.count - $0.spare.count } }
}
