/// A checksum a server advertised that is not a digest of the whole file: S3's composite
/// checksum of a multipart upload (`BASE64-N`, `x-amz-checksum-type: COMPOSITE`), a checksum of
/// its parts' checksums.
public struct CompositeChecksum: Sendable, Equatable, Codable {
    /// The header it came from (`x-amz-checksum-crc32c`).
    public var header: String
    /// The checksum's algorithm, used for the parts and over their checksums.
    public var algorithm: DigestAlgorithm
    /// The checksum of the parts' checksums, lower-case hex.
    public var hex: String
    /// How many parts, when the server said.
    public var parts: Int?
    /// Each part's size in bytes, in order, when looked up (S3's HEAD with `partNumber`); they
    /// add up to the file's size.
    public var partSizes: [Int64]? = nil

    package init(header: String, algorithm: DigestAlgorithm, hex: String, parts: Int? = nil, partSizes: [Int64]? = nil) {
        self.header = header
        self.algorithm = algorithm
        self.hex = hex
        self.parts = parts
        self.partSizes = partSizes
    }
}
