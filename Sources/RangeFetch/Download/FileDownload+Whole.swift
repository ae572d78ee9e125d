import RangeFetchBase
import RangeFetchNetwork

/// A file that came whole with its probe (``Prober/Answer/isWhole``, a batch's small file):
/// written from memory into `NAME.part`, its digests checked over the bytes in memory, synced
/// and renamed into place (with the batch's other files, by a ``SyncGroup``), in the same
/// durable order as any download and with no engine.
extension FileDownload {
    /// Writes `body`, the whole of `remote`, into `file` (open, locked, empty) and renames it to
    /// `paths.final` once its digests match `expected`; durable before this returns.
    /// - Parameter group: syncs and renames the file together with others; `nil`: alone.
    func runWhole(remote: RemoteFile, body: [UInt8], file: PartialFile, paths: OutputPaths,
                  expected: [(DigestValue, String)], group: SyncGroup? = nil) throws(DownloadError) -> DownloadSummary {
        let size = Int64(body.count)
        emit(.started(DownloadStart(path: paths.final, totalBytes: size, resumedBytes: 0, segments: 1, connections: 1,
                                    segmented: false, adaptive: false)))
        do {
            try DownloadError.withSystemCalls { () throws(SystemCallError) in
                try body.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try file.write(raw, at: 0) } }.get()
                if group == nil { try file.synchronize() }
            }
        } catch {
            // Nothing of it is worth keeping: fetching it again costs one request.
            FileSystem.remove(paths.partial)
            throw error
        }
        var verified: [DigestValue] = []
        if !expected.isEmpty {
            let digests = MultiDigest(expected.map(\.0.algorithm))
            body.withUnsafeBytes { digests.update($0) }
            let actual = digests.finalize()
            do {
                try DigestCheck.compare(expected: expected, actual: actual, path: paths.final)
            } catch {
                try? file.rename(to: paths.rejected)
                throw error.with(message: "\(error.message); the bytes received were kept as \(paths.rejected)")
            }
            verified = actual
            for (want, source) in expected { emit(.verified(want, source: source)) }
        }
        if options.request.carriesCredentials(for: url) {
            try DownloadError.withSystemCalls { () throws(SystemCallError) in try file.restoreUsualMode() }
        }
        if let group {
            try group.commit(file, to: paths.final)
        } else {
            try file.rename(to: paths.final)
        }
        return DownloadSummary(path: paths.final, bytes: size, transferredBytes: size, resumedBytes: 0,
                               elapsedSeconds: MonotonicTime.now() - startedAt, verified: verified,
                               alreadyComplete: false, segmented: false, verificationSeconds: nil)
    }
}
