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
}
