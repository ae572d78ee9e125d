import RangeFetchBase

/// What one of S3's `x-amz-checksum-*` headers (sent when a request says
/// `x-amz-checksum-mode: ENABLED`) says about an object, as a pure value.
///
/// The value is base64 of the checksum's big-endian bytes. An object uploaded in one piece, or
/// in parts with a `FULL_OBJECT` checksum (CRC64NVME always is), has a checksum of its whole
/// bytes. A multipart upload's `COMPOSITE` checksum (`BASE64-N`) is a checksum of its parts'
/// checksums: not a digest of the file, and checkable only part by part.
package enum S3Checksum: Equatable {
    /// A checksum of the object's bytes.
    case wholeFile(DigestValue)
    /// A checksum (`value`) of the checksums of `parts` parts (`nil`: how many is not said).
    case composite(DigestValue, parts: Int?)

    /// The headers read, with the algorithm of each.
    package static let fields: [(name: String, algorithm: DigestAlgorithm)] = [
        ("x-amz-checksum-sha256", .sha256), ("x-amz-checksum-sha1", .sha1), ("x-amz-checksum-crc32", .crc32),
        ("x-amz-checksum-crc32c", .crc32c), ("x-amz-checksum-crc64nvme", .crc64nvme),
    ]

    /// Reads a header's `value` for `algorithm`, with the object's `x-amz-checksum-type` and
    /// ETag. Without a type, a checksum of an object uploaded in parts (its ETag is `"MD5-N"`)
    /// is taken as composite unless it is a CRC64NVME, which S3 computes only over the whole
    /// object. `nil`: the value is not base64 of the algorithm's length.
    package static func read(algorithm: DigestAlgorithm, value: String, type: String?, etag: String?) -> S3Checksum? {
        var encoded = Substring(value.trimmingASCIIWhitespace())
        var parts: Int?
        if let dash = encoded.lastIndex(of: "-"), let count = Int(encoded[encoded.index(after: dash)...]), count > 0 {
            parts = count
            encoded = encoded[..<dash]
        }
        guard let bytes = Base64.decode(String(encoded)), bytes.count == algorithm.byteCount else { return nil }
        let value = DigestValue(algorithm: algorithm, bytes: bytes)
        let etagParts = etag.flatMap(multipartParts)
        switch type?.uppercased() {
        case "FULL_OBJECT" where parts == nil: return .wholeFile(value)
        case "COMPOSITE": return .composite(value, parts: parts ?? etagParts)
        default:
            if parts != nil { return .composite(value, parts: parts) }
            if algorithm != .crc64nvme, let etagParts { return .composite(value, parts: etagParts) }
            return .wholeFile(value)
        }
    }

    /// How many parts an object was uploaded in, when its ETag is S3's of a multipart upload
    /// (`"HEX-N"`); `nil` for any other ETag.
    package static func multipartParts(_ etag: String) -> Int? {
        let bare = etag.filter { $0 != "\"" }
        guard let dash = bare.lastIndex(of: "-"), let count = Int(bare[bare.index(after: dash)...]), count > 0,
              !bare[..<dash].isEmpty, bare[..<dash].allSatisfy(\.isHexDigit) else { return nil }
        return count
    }
}
