import RangeFetchBase

/// How large a body the server encoded unasked may grow when decoded: a request for identity
/// that gets `Content-Encoding: gzip` anyway (``RemoteFile/contentEncoding``) is decoded before
/// it is written, and a few KiB of gzip can decode to gigabytes (61 KB of zeros became 62 MB).
///
/// Nothing announces the decoded size, so the bound is what such a file could plausibly be:
/// at most ``ratio`` times the encoded bytes received so far (gzip reaches ~1030:1 only on long
/// runs of one byte; text and binaries compress 2-10:1), and never less than ``floorBytes``.
/// A user who asks for a coding (`-H 'Accept-Encoding: gzip'`) expects decoding and is not
/// limited, as curl's `--compressed` is not.
///
/// | encoded so far | decoded so far | allowed |
/// |----------------|----------------|---------|
/// | 61 KiB         | 16 MiB         | yes (the floor)  |
/// | 61 KiB         | 16 MiB + 1     | no      |
/// | 1 MiB          | 200 MiB        | yes     |
/// | 1 MiB          | 200 MiB + 1    | no      |
package enum DecodedSizeLimit {
    /// Decoded bytes allowed per encoded byte.
    package static let ratio: Int64 = 200
    /// Decoded bytes always allowed, whatever the encoded count.
    package static let floorBytes: Int64 = 16 << 20

    /// Whether `decoded` bytes may have come from `encoded` bytes of an unasked coding.
    package static func allows(decoded: Int64, encoded: Int64) -> Bool {
        encoded > Int64.max / ratio || decoded <= max(floorBytes, encoded * ratio)
    }

    /// The error that stops such a body: one line naming the URL, the coding, the sizes and what to do.
    package static func refusal(url: String, coding: String, decoded: Int64, encoded: Int64) -> DownloadError {
        DownloadError(.protocolViolation, "\(url): the server sent the file \(coding)-encoded although identity was asked, and \(ByteCount.format(encoded)) of it decoded to over \(ByteCount.format(decoded)) (more than \(ratio) times as much, as a decompression bomb does); stopped there. If the file is really that compressible, ask for the coding with -H 'Accept-Encoding: \(coding)', which lifts this limit", url: url)
    }
}
