#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to a file descriptor whole (`write(2)`, looping over short writes), without
/// C's shared `FILE` buffers (which Swift 6 rightly treats as shared mutable state).
func writeOut(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)
    var done = 0
    while done < bytes.count {
        let written = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress! + done, $0.count - done) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        done += written
    }
}
