/// Parses the ways users hand us expected digests.
package enum ChecksumSpec {
    /// Parses `ALGO=HEX` (`sha256=…`, `SHA-256=…`, `md5=…`, `crc32c=…`; hex in either case; a
    /// CRC's hex is its value, most significant digit first: `crc32c=e3069283`).
    public static func parse(_ text: String) throws(DownloadError) -> DigestValue {
        guard let equals = text.firstIndex(of: "=") else {
            throw DownloadError(.invalidOption, "checksum '\(text)' must look like ALGO=HEX, e.g. sha256=9f86d0…")
        }
        let name = String(text[..<equals])
        let hex = String(String(text[text.index(after: equals)...]).trimmingASCIIWhitespace())
        guard let algorithm = DigestAlgorithm(name: name) else {
            throw DownloadError(.invalidOption, "checksum algorithm '\(name)' is not supported (use sha256, sha512, sha1, md5, crc32, crc32c or crc64nvme)")
        }
        guard let value = DigestValue(algorithm: algorithm, hex: hex) else {
            throw DownloadError(.invalidOption, "\(algorithm.rawValue) checksum must be \(algorithm.byteCount * 2) hex digits (got '\(hex)')")
        }
        return value
    }

    /// Finds the entry for `fileName` in `sha256sum`/`md5sum`-style text (`HEX  NAME` or
    /// `HEX *NAME`, one per line), guessing the algorithm from the digest length.
    /// - Returns: `nil` when no line names the file.
    public static func entry(in text: String, forFileNamed fileName: String) throws(DownloadError) -> DigestValue? {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let trimmed = line.trimmingCharacters()
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            guard let space = trimmed.firstIndex(of: " ") else { continue }
            let hex = String(trimmed[..<space])
            var name = trimmed[space...].drop(while: { $0 == " " })
            if name.hasPrefix("*") { name = name.dropFirst() }
            let bareName = name.split(separator: "/").last.map(String.init) ?? String(name)
            guard String(name) == fileName || bareName == fileName else { continue }
            guard let algorithm = DigestAlgorithm.allCases.first(where: { $0.isCryptographic && $0.byteCount * 2 == hex.count }),
                  let value = DigestValue(algorithm: algorithm, hex: hex) else {
                throw DownloadError(.invalidOption, "checksum file entry for \(fileName) has a malformed digest '\(hex)'")
            }
            return value
        }
        return nil
    }

    /// Every entry of `sha256sum`/`md5sum`-style text, in order: the name as written (without
    /// the `*` of binary mode) and its digest, the algorithm guessed from the digest's length, as
    /// `sha256sum -c` reads the file.
    /// - Throws: `.invalidOption` naming the first line whose digest is malformed.
    public static func entries(in text: String) throws(DownloadError) -> [(name: String, digest: DigestValue)] {
        var entries: [(name: String, digest: DigestValue)] = []
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let trimmed = line.trimmingCharacters()
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            guard let space = trimmed.firstIndex(of: " ") else {
                throw DownloadError(.invalidOption, "checksum file line '\(trimmed)' is not 'HEX  NAME'")
            }
            let hex = String(trimmed[..<space])
            var name = trimmed[space...].drop(while: { $0 == " " })
            if name.hasPrefix("*") { name = name.dropFirst() }
            guard !name.isEmpty,
                  let algorithm = DigestAlgorithm.allCases.first(where: { $0.isCryptographic && $0.byteCount * 2 == hex.count }),
                  let value = DigestValue(algorithm: algorithm, hex: hex) else {
                throw DownloadError(.invalidOption, "checksum file entry for '\(name)' has a malformed digest '\(hex)'")
            }
            entries.append((String(name), value))
        }
        return entries
    }
}
