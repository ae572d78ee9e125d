/// A digest algorithm rangefetch can verify with.
public enum DigestAlgorithm: String, Sendable, CaseIterable, Codable {
    case sha256, sha512, sha1, md5

    /// Accepts `sha256`, `SHA-256`, `sha_256`, `md5`, ... (aria2's spellings included).
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
        }
    }

    /// The name coreutils uses for its `*sum` tool (`sha256sum`).
    public var toolName: String { rawValue + "sum" }
}
