import RangeFetchBase

/// Reads whole-file digests a server advertises: `Repr-Digest: sha-256=:BASE64:` (RFC 9530),
/// the older `Digest: SHA-256=BASE64` (RFC 3230), `Content-MD5: BASE64`, and S3's
/// `x-amz-checksum-sha256`, `-sha1`, `-crc32`, `-crc32c` and `-crc64nvme` (``S3Checksum``)
/// where they are checksums of the whole object.
package enum AdvertisedDigestParser {
    package static func parse(_ response: ResponseHead) -> [AdvertisedDigest] {
        var digests: [AdvertisedDigest] = []
        for (field, checksum) in s3Checksums(response) {
            if case .wholeFile(let value) = checksum {
                digests.append(AdvertisedDigest(algorithm: value.algorithm, hex: value.hex, header: field))
            }
        }
        if let value = response["repr-digest"] {
            digests += entries(value, header: "Repr-Digest", colonWrapped: true)
        }
        if let value = response["digest"] {
            digests += entries(value, header: "Digest", colonWrapped: false)
        }
        // Content-MD5 describes the body of this response, which is the whole file only on a 200.
        if response.status == 200, let value = response["content-md5"],
           let bytes = Base64.decode(String(value.trimmingASCIIWhitespace())), bytes.count == 16 {
            digests.append(AdvertisedDigest(algorithm: .md5, hex: DigestValue(algorithm: .md5, bytes: bytes).hex,
                                            header: "Content-MD5"))
        }
        return digests
    }

    /// S3 checksums that are not of the whole file (a multipart upload's composite ones), which
    /// are not verified.
    package static func compositeChecksums(_ response: ResponseHead) -> [CompositeChecksum] {
        s3Checksums(response).compactMap { field, checksum in
            if case .composite(let value, let parts) = checksum {
                CompositeChecksum(header: field, algorithm: value.algorithm, hex: value.hex, parts: parts)
            } else {
                nil
            }
        }
    }

    /// Every well-formed `x-amz-checksum-*` header of `response`, read.
    private static func s3Checksums(_ response: ResponseHead) -> [(String, S3Checksum)] {
        S3Checksum.fields.compactMap { field in
            guard let value = response[field.name],
                  let checksum = S3Checksum.read(algorithm: field.algorithm, value: value,
                                                 type: response["x-amz-checksum-type"], etag: response["etag"]) else { return nil }
            return (field.name, checksum)
        }
    }

    /// The digests a response's `Content-Digest` (RFC 9530) gives for the bytes of *this*
    /// response (a 206's range, not the file), sha-256 first; algorithms we do not know are left
    /// out, so an answer carrying only those carries no proof.
    package static func contentDigests(_ response: ResponseHead) -> [AdvertisedDigest] {
        guard let value = response["content-digest"] else { return [] }
        return entries(value, header: "Content-Digest", colonWrapped: true)
            .sorted { ($0.algorithm == .sha256 ? 0 : 1) < ($1.algorithm == .sha256 ? 0 : 1) }
    }

    private static func entries(_ value: String, header: String, colonWrapped: Bool) -> [AdvertisedDigest] {
        value.split(separator: ",").compactMap { entry in
            guard let equals = entry.firstIndex(of: "=") else { return nil }
            let name = entry[..<equals].trimmingCharacters()
            var encoded = String(entry[entry.index(after: equals)...].trimmingCharacters())
            if colonWrapped {
                guard encoded.hasPrefix(":"), encoded.hasSuffix(":"), encoded.count >= 2 else { return nil }
                encoded = String(encoded.dropFirst().dropLast())
            }
            guard let algorithm = DigestAlgorithm(name: String(name)), algorithm == .sha256 || algorithm == .md5 || algorithm == .sha512,
                  let bytes = Base64.decode(encoded), bytes.count == algorithm.byteCount else { return nil }
            return AdvertisedDigest(algorithm: algorithm, hex: DigestValue(algorithm: algorithm, bytes: bytes).hex,
                                    header: header)
        }
    }
}

/// Standard base64 decoding (RFC 4648, with padding), small and allocation-light.
package enum Base64 {
    package static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for character in text.utf8 {
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(character - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(character - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(character - 48 + 52)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "/"), UInt8(ascii: "_"): values.append(63)
            case UInt8(ascii: "="): continue
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            let a = chunk[chunk.startIndex], b = chunk[chunk.startIndex + 1]
            output.append(a << 2 | b >> 4)
            if chunk.count > 2 { output.append((b & 0xF) << 4 | chunk[chunk.startIndex + 2] >> 2) }
            if chunk.count > 3 { output.append((chunk[chunk.startIndex + 2] & 0x3) << 6 | chunk[chunk.startIndex + 3]) }
            index += 4
        }
        return output
    }
}
