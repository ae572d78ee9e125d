import RangeFetchBase

/// What a response's `Content-Digest` (RFC 9530) proved about the bytes it delivered.
package enum ContentProof: Equatable, Sendable {
    /// Every byte the response announced arrived and hashes to its `Content-Digest`.
    case matched
    /// Every byte arrived and the digest differs: the bytes are not what the server meant.
    case mismatched(algorithm: DigestAlgorithm, expected: String, actual: String)
    /// The response ended before its last byte or sent more than it announced: its bytes cannot
    /// be checked. When the server or the network broke it off (a dropped connection, an
    /// overlong body) the engine keeps them as any unproven bytes (the whole-file digest, when
    /// there is one, covers them; a mirror's are spot-checked), so a flaky link still makes
    /// progress. When the engine cut it (a slow request replaced or given up, a stolen tail, a
    /// dropped source, a stopped run) they are not kept: it is fetched again.
    case unproven
}

/// Hashes one 206's content as it arrives, from its first byte, to check it against the
/// response's `Content-Digest` once it has ended.
///
/// Engine thread only (fed by libcurl's write callback through ``SegmentTransfer``).
package final class ContentDigestCheck {
    /// The digest the response announced.
    package let expected: AdvertisedDigest
    /// File offset of the response's first byte: a mismatch rejects the segment's bytes from here.
    package let start: Int64
    /// Bytes the response announced (its `Content-Range`'s length).
    package let length: Int64
    /// Bytes hashed so far.
    package private(set) var hashed: Int64 = 0
    private let digest: Digest

    /// A check of the 206 whose head is `head`, its first byte landing at file offset `start`;
    /// `nil` when it carries no `Content-Digest` in an algorithm we know (sha-256, sha-512 and
    /// the others ``DigestAlgorithm`` computes), or no usable `Content-Range`.
    package init?(head: ResponseHead, start: Int64) {
        guard head.status == 206, let expected = AdvertisedDigestParser.contentDigests(head).first,
              let range = head.contentRange?.range else { return nil }
        self.expected = expected
        self.start = start
        length = range.count
        digest = Digest(expected.algorithm)
    }

    /// Adds the next bytes of the response's content.
    package func update(_ bytes: UnsafeRawBufferPointer) {
        digest.update(bytes)
        hashed += Int64(bytes.count)
    }

    /// The proof once the response has ended; `deliveredWhole` says it ended cleanly with every
    /// byte taken (no short read, no overlong body, not cut at a stolen tail). Call once.
    package func outcome(deliveredWhole: Bool) -> ContentProof {
        guard deliveredWhole, hashed == length else { return .unproven }
        let actual = digest.finalize().hex
        return actual == expected.hex ? .matched
            : .mismatched(algorithm: expected.algorithm, expected: expected.hex, actual: actual)
    }
}
