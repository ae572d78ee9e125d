import RangeFetchBase
import RangeFetchNetwork

extension DownloadOptions {
    /// The digests `remote` must match, with where each came from: the user's, then the
    /// server's (if ``verifyAdvertisedDigests``).
    func expectedDigests(for remote: RemoteFile) -> [(DigestValue, String)] {
        var expected = checksums.map { ($0, "the checksum given") }
        if verifyAdvertisedDigests {
            for advertised in remote.advertisedDigests where !expected.contains(where: { $0.0.algorithm == advertised.algorithm }) {
                if let value = DigestValue(algorithm: advertised.algorithm, hex: advertised.hex) {
                    expected.append((value, "server's \(advertised.header) header"))
                }
            }
        }
        return expected
    }

    /// Whether `expected` proves bytes from anywhere: it holds a cryptographic digest. A CRC
    /// (S3's CRC32, CRC32C, CRC64NVME) catches corruption, but anyone can make other bytes of the
    /// same length match it, so it does not spare a mirror's bytes their spot checks.
    static func provesMirrors(_ expected: [(DigestValue, String)]) -> Bool {
        expected.contains { $0.0.algorithm.isCryptographic }
    }
}
