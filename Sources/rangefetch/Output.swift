import RangeFetch

/// Writes `text` to a file descriptor whole (``FileDescriptor/writeAll(_:)``: `write(2)`, again
/// after a short or interrupted write), without C's shared `FILE` buffers (which Swift 6
/// rightly treats as shared mutable state). A failed write is dropped: there is nowhere left to
/// say so.
func writeOut(_ text: String, to descriptor: Int32) {
    let output = FileDescriptor(descriptor, path: "output")
    try? output.writeAll(Array(text.utf8))
}
