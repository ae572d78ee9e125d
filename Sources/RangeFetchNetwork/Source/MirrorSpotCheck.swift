import RangeFetchBase

/// Checks the bytes mirrors delivered against the main URL, without a digest to go by.
///
/// Before any byte of a mirror is trusted it must agree with the main URL at sampled blocks
/// (``MirrorAgreement``), but a mirror that knows those samples can answer them truly and send
/// other bytes for the real ranges. So once the ranges are on disk, each range a mirror
/// delivered is checked too: a slice at a random offset and of a random length inside it is
/// fetched from the main URL and compared with the file. The mirror only ever saw ordinary range
/// requests, so it cannot tell which of its bytes are checked. A mirror that fails is dropped and
/// its ranges are fetched again.
///
/// A spot check finds a mirror that corrupts whole ranges, or large parts of them; one that
/// changes a few bytes can slip through. Only a digest proves a mirror's bytes.
///
/// | a mirror's range    | bytes checked (random offset)          |
/// |---------------------|----------------------------------------|
/// | under 25.6 KB       | 256 (the whole range when smaller)      |
/// | 25.6 KB – 6.4 MB    | 0.5–1% of it, drawn at random           |
/// | over 6.4 MB         | 32–64 KiB                               |
///
/// So checks cost at most about 1% more bytes than the mirrors delivered.
package struct MirrorSpotCheck {
    package static let minimumSliceBytes: Int64 = 256
    package static let maximumSliceBytes: Int64 = 64 << 10
    /// Checked bytes per delivered byte, at most.
    package static let fraction = 0.01

    /// A slice to check inside `extent`: its length between half and all of
    /// `fraction x extent` (clamped to ``minimumSliceBytes``...``maximumSliceBytes``), at a
    /// random offset.
    package static func slice(of extent: ByteRange, using random: inout some RandomNumberGenerator) -> ByteRange {
        let cap = min(maximumSliceBytes, max(minimumSliceBytes, Int64(Double(extent.count) * fraction)))
        guard extent.count > cap else { return extent }
        let length = cap <= minimumSliceBytes ? cap : Int64.random(in: (cap / 2)...cap, using: &random)
        let start = extent.lower + Int64.random(in: 0...(extent.count - length), using: &random)
        return ByteRange(start, start + length)
    }

    /// The first slice of `extents` whose bytes in `file` differ from the main URL's; `nil` when
    /// all agree. Slices are asked from the first of `referenceURLs` (the URL the main source
    /// resolved to), and from the next when it stops answering (a signed redirect target that
    /// expired during the download: the user's URL resolves afresh).
    /// - Throws: when no reference URL serves a slice: the check could not be made.
    package static func firstMismatch(extents: [ByteRange], file: PartialFile, referenceURLs: [String],
                              fetcher: SmallGet) throws(DownloadError) -> ByteRange? {
        var random = SystemRandomNumberGenerator()
        var references = referenceURLs[...]
        // One check per run of ranges the mirror sent back to back.
        for extent in ByteRange.merged(extents) {
            let slice = slice(of: extent, using: &random)
            var answer: SmallGet.Answer?
            var refusal = "no reference URL"
            while answer == nil, let reference = references.first {
                do {
                    let got = try fetcher.fetch(reference, range: slice)
                    if got.status == 206, got.contentRange?.range == slice, got.body.count == Int(slice.count) {
                        answer = got
                    } else {
                        refusal = "\(reference): HTTP \(got.status)"
                    }
                } catch where error.code == .cancelled {
                    throw error
                } catch {
                    refusal = error.message
                }
                if answer == nil { references = references.dropFirst() }
            }
            guard let answer else {
                let main = referenceURLs.first
                throw DownloadError(.protocolViolation, "could not read bytes \(slice.httpRangeSpec) of the main URL\(main.map { " \($0)" } ?? "") to check a mirror's bytes against (\(refusal))",
                                    url: main, remedy: .runAgainToResume)
            }
            var local = [UInt8](repeating: 0, count: Int(slice.count))
            let read = try? local.withUnsafeMutableBytes { buffer throws(SystemCallError) in
                try file.read(into: buffer, at: slice.lower)
            }
            if read != local.count || local != answer.body { return slice }
        }
        return nil
    }

    package init() {
    }
}
