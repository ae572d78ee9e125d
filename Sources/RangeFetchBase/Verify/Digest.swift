import COpenSSL

/// A streaming message digest: over OpenSSL's EVP interface, or a CRC (CRC32, CRC32C, CRC64NVME) of our own.
///
/// ```swift
/// var digest = Digest(.sha256)
/// digest.update(bytes)
/// let hex = digest.finalize().hex
/// ```
/// Not thread-safe; one instance per stream.
package final class Digest {
    /// The algorithm it computes.
    public let algorithm: DigestAlgorithm
    /// OpenSSL's context; `nil` for a CRC.
    private let context: OpaquePointer?
    /// The CRC's state; `nil` for an OpenSSL digest.
    private var crc: CRC?
    private var finished = false

    /// A new digest of `algorithm`.
    public init(_ algorithm: DigestAlgorithm) {
        self.algorithm = algorithm
        if let kind = algorithm.crc {
            self.context = nil
            self.crc = CRC(kind)
            return
        }
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        self.context = context
        guard EVP_DigestInit_ex(context, Self.evp(algorithm), nil) == 1 else {
            fatalError("EVP_DigestInit_ex failed for \(algorithm)")
        }
    }

    deinit { if let context { EVP_MD_CTX_free(context) } }

    /// Adds `bytes` to the digest.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "digest already finalized")
        guard bytes.count > 0 else { return }
        if crc != nil {
            crc?.update(bytes)
        } else {
            EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        }
    }

    /// Adds `bytes` to the digest.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Ends the stream and returns the digest. Call once.
    public func finalize() -> DigestValue {
        precondition(!finished, "digest already finalized")
        finished = true
        if let crc { return DigestValue(algorithm: algorithm, bytes: crc.bytes) }
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        return DigestValue(algorithm: algorithm, bytes: Array(output.prefix(Int(length))))
    }

    private static func evp(_ algorithm: DigestAlgorithm) -> OpaquePointer? {
        switch algorithm {
        case .sha256: EVP_sha256()
        case .sha512: EVP_sha512()
        case .sha1: EVP_sha1()
        case .md5: EVP_md5()
        case .crc32, .crc32c, .crc64nvme: nil
        }
    }
}

/// A computed or expected digest.
public struct DigestValue: Sendable, Equatable, CustomStringConvertible {
    /// The algorithm.
    public var algorithm: DigestAlgorithm
    /// The digest's bytes.
    public var bytes: [UInt8]

    /// A digest of `algorithm` with these bytes.
    public init(algorithm: DigestAlgorithm, bytes: [UInt8]) {
        self.algorithm = algorithm
        self.bytes = bytes
    }

    /// Parses hex (either case) of the algorithm's length.
    public init?(algorithm: DigestAlgorithm, hex: String) {
        let characters = Array(hex.utf8)
        guard characters.count == algorithm.byteCount * 2 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(algorithm.byteCount)
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let high = Self.nibble(characters[index]), let low = Self.nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.init(algorithm: algorithm, bytes: bytes)
    }

    /// Lower-case hex.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `ALGO=HEX`.
    public var description: String { "\(algorithm.rawValue)=\(hex)" }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
