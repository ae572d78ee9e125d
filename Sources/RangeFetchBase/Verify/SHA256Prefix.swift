import COpenSSL

/// The first 64 bits of a text's SHA-256, as one number: a fingerprint that a server or a list
/// cannot aim at another (shards, claimed paths). OpenSSL's one-shot digest into a buffer on the
/// stack, since every line of a list may be hashed.
package enum SHA256Prefix {
    package static func of(_ text: String) -> UInt64 {
        var text = text
        return text.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(EVP_MAX_MD_SIZE)) { digest -> UInt64 in
                var length: UInt32 = 0
                guard EVP_Digest(bytes.baseAddress, bytes.count, digest.baseAddress, &length, EVP_sha256(), nil) == 1,
                      length >= 8 else { fatalError("EVP_Digest failed for SHA-256") }
                return digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            }
        }
    }
}
