extension FileDescriptor {
    /// Bytes the read-back buffer of ``withReadBackBuffer(_:)`` holds: 1 MiB, large reads.
    package static let readBackBytes = 1 << 20

    /// Runs `body` with a buffer of ``readBackBytes`` for ``readBack(_:into:until:_:)``, aligned
    /// to 4096 bytes (a page), freed when `body` returns.
    package static func withReadBackBuffer<Value, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readBackBytes, alignment: 4096)
        defer { buffer.deallocate() }
        return try body(buffer)
    }

    /// Reads the bytes of `range` back from the file in order (`pread`, at most `buffer.count`
    /// at a time, into `buffer` each time) and hands each chunk and its offset to `body`: what
    /// piece checks, resume block checks, repairs and digests of a file on disk share.
    ///
    /// | the file                       | chunks handed on                    | returns                  |
    /// |--------------------------------|-------------------------------------|--------------------------|
    /// | holds all of `range`           | all of `range`                      | `range.upper`            |
    /// | ends inside `range`            | up to its end                       | its size                 |
    /// | ends at or before `range.lower`| none                                | `range.lower`            |
    /// | `stop()` is true before a read | those before it                     | where they ended         |
    ///
    /// A short read is no end: only a read of 0 bytes is. `range.upper` may be `Int64.max`, for
    /// "to the end of the file".
    /// - Parameters:
    ///   - stop: asked before every read (a cancellation), so a large range stops within one.
    /// - Returns: the offset reached.
    /// - Throws: a failed `pread`, or what `body` throws.
    @discardableResult
    package func readBack(_ range: ByteRange, into buffer: UnsafeMutableRawBufferPointer, until stop: () -> Bool = { false },
                  _ body: (_ offset: Int64, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> Void)
        throws(SystemCallError) -> Int64 {
        precondition(buffer.count > 0, "a read-back needs room for at least one byte")
        var offset = range.lower
        while offset < range.upper, !stop() {
            let want = Int(min(Int64(buffer.count), range.upper - offset))
            let chunk = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
            let count = try read(fromAbsoluteOffset: offset, into: chunk)
            if count == 0 { break }
            try body(offset, UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return offset
    }
}
