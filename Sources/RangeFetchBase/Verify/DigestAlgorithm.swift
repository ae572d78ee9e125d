/// A digest algorithm rangefetch can verify with: the cryptographic digests (OpenSSL's) and the
/// cyclic redundancy checks S3 stores (CRC32, CRC32C, CRC64NVME), whose values are written big-endian.
public enum DigestAlgorithm: String, Sendable, CaseIterable, Codable {
    case sha256, sha512, sha1, md5
    /// CRC-32 as zlib computes it (S3's `CRC32`).
    case crc32
    /// CRC-32C, Castagnoli's (S3's `CRC32C`).
    case crc32c
    /// CRC-64/NVME (S3's `CRC64NVME`).
    case crc64nvme

    /// Accepts `sha256`, `SHA-256`, `sha_256`, `md5`, `crc32c`, `CRC64NVME`, ... (aria2's
    /// spellings included).
    public init?(name: String) {
        let folded = name.lowercased().filter { $0 != "-" && $0 != "_" }
        guard let algorithm = DigestAlgorithm(rawValue: folded) else { return nil }
        self = algorithm
    }

    /// Digest length in bytes.
    public var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha512: 64
        case .sha1: 20
        case .md5: 16
        case .crc32, .crc32c: 4
        case .crc64nvme: 8
        }
    }

    /// A cryptographic digest (not a CRC): what `sha256sum`-style files hold, so what their
    /// digest lengths are matched against.
    public var isCryptographic: Bool {
        switch self {
        case .sha256, .sha512, .sha1, .md5: true
        case .crc32, .crc32c, .crc64nvme: false
        }
    }

    /// The CRC it is, if it is one.
    package var crc: CRC.Kind? {
        switch self {
        case .crc32: .crc32
        case .crc32c: .crc32c
        case .crc64nvme: .crc64nvme
        case .sha256, .sha512, .sha1, .md5: nil
        }
    }

    /// The name coreutils uses for its `*sum` tool (`sha256sum`).
    public var toolName: String { rawValue + "sum" }
}
