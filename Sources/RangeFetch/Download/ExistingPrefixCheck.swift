import RangeFetchBase
import RangeFetchNetwork

/// Whether a file already at the output path really begins the download before `--continue`
/// takes its bytes (curl's `-C -` and wget's `-c` take them on trust, and then a file that only
/// has the same name ends up with foreign bytes in front and exits 0).
///
/// Checking costs two small range requests: the prefix's first and last blocks are fetched from
/// the server and compared with the file. A different file, a file of another version, or one
/// whose tail was cut or zero-filled fails at once; only a digest (`--checksum`) proves the bytes
/// in between.
///
/// | prefix bytes       | ranges compared                      |
/// |--------------------|--------------------------------------|
/// | 0                  | none                                 |
/// | up to 128 KiB      | the whole prefix, in one request     |
/// | more               | its first 64 KiB and its last 64 KiB |
struct ExistingPrefixCheck {
    /// The most bytes compared at each end of the prefix.
    static let blockBytes: Int64 = 64 << 10

    /// The ranges of a `prefixBytes`-byte prefix to compare with the server.
    static func ranges(prefixBytes: Int64) -> [ByteRange] {
        guard prefixBytes > 0 else { return [] }
        guard prefixBytes > 2 * blockBytes else { return [ByteRange(0, prefixBytes)] }
        return [ByteRange(0, blockBytes), ByteRange(prefixBytes - blockBytes, prefixBytes)]
    }

    var fetcher: SmallGet

    /// Compares the first `prefixBytes` of the file at `path` with `remote` at ``ranges(prefixBytes:)``.
    /// - Throws: ``DownloadError`` `.outputExists` naming the first range that differs (with the
    ///   remedy `--overwrite`), the server's refusal when it answers a range other than exactly,
    ///   or the read's failure. Nothing on disk is changed.
    func check(path: String, prefixBytes: Int64, remote: RemoteFile) throws(DownloadError) {
        let url = Source(remote: remote).requestURL
        let ranges = Self.ranges(prefixBytes: prefixBytes)
        let onDisk = try DownloadError.withSystemCalls { () throws(SystemCallError) in
            try FileSystem.bytes(of: ranges, inFileAt: path)
        }
        for (range, local) in zip(ranges, onDisk) {
            let answer = try fetcher.fetch(url, range: range)
            guard MirrorAgreement.isExactSample(answer, of: range, from: remote), answer.body.count == Int(range.count) else {
                throw DownloadError(.protocolViolation, "\(Redaction.url(url)) did not answer bytes \(range.httpRangeSpec) exactly (HTTP \(answer.status)), so the \(prefixBytes) bytes already in \(path) cannot be checked and were not continued from",
                                    url: Redaction.url(url), remedy: .overwrite)
            }
            if local != answer.body {
                throw DownloadError(.outputExists, "\(path) is not the start of \(Redaction.url(remote.url)): its bytes \(range.httpRangeSpec) differ from the server's, so it was not continued from (nothing was changed)",
                                    url: Redaction.url(remote.url), remedy: .overwrite)
            }
        }
    }
}
