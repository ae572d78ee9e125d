/// The digests of a file's consecutive pieces (a metalink's `<pieces length type>`): what a
/// response's bytes are proven against as they arrive, and what the journal keeps proven.
public struct PieceDigests: Sendable, Equatable {
    /// Bytes in every piece but the last.
    public var length: Int64
    /// The digest of each piece, in file order.
    public var digests: [DigestValue]

    /// The file bytes piece `index` covers in a file of `size` bytes.
    public func range(_ index: Int, size: Int64) -> ByteRange {
        let start = min(size, Int64(index) * length)
        return ByteRange(start, min(size, start + length))
    }

    package init(length: Int64, digests: [DigestValue]) {
        self.length = length
        self.digests = digests
    }
}
