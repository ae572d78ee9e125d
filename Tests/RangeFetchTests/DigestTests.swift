import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

struct DigestTests {
    static let vectors: [(DigestAlgorithm, String, String)] = [
        (.sha256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (.sha256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (.md5, "", "d41d8cd98f00b204e9800998ecf8427e"),
        (.md5, "abc", "900150983cd24fb0d6963f7d28e17f72"),
        (.sha1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (.sha512, "abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
    ]

    @Test(arguments: vectors)
    func matchesKnownVectors(algorithm: DigestAlgorithm, input: String, hex: String) {
        let digest = Digest(algorithm)
        digest.update(Array(input.utf8))
        #expect(digest.finalize().hex == hex)
    }

    @Test func aMillionAsInUnevenPieces() {
        let expected: [DigestAlgorithm: String] = [
            .sha256: "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
            .md5: "7707d6ae4e027c70eea2a935c2296f21",
            .sha1: "34aa973cd4c4daa4f61eeb2bdbad27316534016f",
        ]
        for (algorithm, hex) in expected {
            let digest = Digest(algorithm)
            var remaining = 1_000_000
            var piece = 1
            while remaining > 0 {
                let count = min(piece, remaining)
                digest.update([UInt8](repeating: UInt8(ascii: "a"), count: count))
                remaining -= count
                piece = piece * 3 + 1
            }
            #expect(digest.finalize().hex == hex, "\(algorithm)")
        }
    }
}

struct ChecksumSpecTests {
    @Test func parsesAlgorithmSpellingsAndHexCase() throws {
        let hex = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
        for spelling in ["sha256", "SHA-256", "sha_256", "Sha256"] {
            let value = try ChecksumSpec.parse("\(spelling)=\(hex)")
            #expect(value.algorithm == .sha256)
            #expect(value.hex == hex.lowercased())
        }
        #expect(try ChecksumSpec.parse("md5=900150983cd24fb0d6963f7d28e17f72").algorithm == .md5)
    }

    @Test(arguments: ["sha256", "sha256=abc", "crc16=0000", "crc32c=123", "md5=zz0150983cd24fb0d6963f7d28e17f72", "=00"])
    func malformedChecksumsAreUsageErrorsNamingTheProblem(text: String) {
        do {
            _ = try ChecksumSpec.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.category == .usage)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func findsTheEntryForTheFileInAChecksumFile() throws {
        let text = """
        d41d8cd98f00b204e9800998ecf8427e  other.bin
        900150983cd24fb0d6963f7d28e17f72 *dir/abc.txt
        ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  sha.txt
        """
        #expect(try ChecksumSpec.entry(in: text, forFileNamed: "abc.txt") == DigestValue(algorithm: .md5, hex: "900150983cd24fb0d6963f7d28e17f72"))
        #expect(try ChecksumSpec.entry(in: text, forFileNamed: "sha.txt")?.algorithm == .sha256)
        #expect(try ChecksumSpec.entry(in: text, forFileNamed: "missing.txt") == nil)
    }

    @Test func readsAdvertisedDigestHeaders() {
        var head = ResponseHead()
        head.consume(line: "HTTP/1.1 200 OK\r\n")
        head.consume(line: "Repr-Digest: sha-256=:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=:, md5=:kAFQmDzST7DWlj99KOF/cg==:\r\n")
        head.consume(line: "Content-MD5: kAFQmDzST7DWlj99KOF/cg==\r\n")
        let digests = AdvertisedDigestParser.parse(head)
        #expect(digests.count == 3)
        #expect(digests[0].hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(digests[1].algorithm == .md5)
        #expect(digests[2].header == "Content-MD5")
    }
}
