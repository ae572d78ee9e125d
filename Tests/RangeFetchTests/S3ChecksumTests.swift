import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Reading S3's `x-amz-checksum-*` headers: which are digests of the whole object (verified),
/// which are composite multipart ones (noted, not verified), which are malformed (ignored); and
/// asking for them with a signed `x-amz-checksum-mode: ENABLED`.
struct S3ChecksumTests {
    static let sha = DigestValue(algorithm: .sha256, hex: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")!
    static let shaBase64 = Data(sha.bytes).base64EncodedString()
    static let crc64 = DigestValue(algorithm: .crc64nvme, hex: "ae8b14860a799888")!
    static let crc64Base64 = Data(crc64.bytes).base64EncodedString()
    static let multipartETag = "\"a45f1422f2dbe3d2890829dd76adba1b-3\""

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var algorithm: DigestAlgorithm
        var value: String
        var type: String?
        var etag: String?
        var expected: S3Checksum?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "single PUT", algorithm: .sha256, value: shaBase64, etag: "\"900150983cd24fb0d6963f7d28e17f72\"",
             expected: .wholeFile(sha)),
        Case(name: "no ETag", algorithm: .sha256, value: " \(shaBase64) ", expected: .wholeFile(sha)),
        Case(name: "FULL_OBJECT multipart", algorithm: .sha256, value: shaBase64, type: "FULL_OBJECT", etag: multipartETag,
             expected: .wholeFile(sha)),
        Case(name: "COMPOSITE with part count", algorithm: .sha256, value: shaBase64 + "-3", type: "COMPOSITE",
             etag: multipartETag, expected: .composite(sha, parts: 3)),
        Case(name: "part count without a type", algorithm: .sha256, value: shaBase64 + "-2", expected: .composite(sha, parts: 2)),
        Case(name: "COMPOSITE without a count", algorithm: .sha256, value: shaBase64, type: "composite", expected: .composite(sha, parts: nil)),
        Case(name: "COMPOSITE counted by the ETag", algorithm: .sha256, value: shaBase64, type: "COMPOSITE", etag: multipartETag,
             expected: .composite(sha, parts: 3)),
        Case(name: "multipart ETag, no type (a HEAD that says less)", algorithm: .sha256, value: shaBase64,
             etag: multipartETag, expected: .composite(sha, parts: 3)),
        Case(name: "CRC64NVME is always whole-object", algorithm: .crc64nvme, value: crc64Base64, etag: multipartETag,
             expected: .wholeFile(crc64)),
        Case(name: "FULL_OBJECT with a part count is contradictory", algorithm: .sha256, value: shaBase64 + "-3",
             type: "FULL_OBJECT", expected: .composite(sha, parts: 3)),
        Case(name: "wrong length (a CRC32 under the CRC64NVME name)", algorithm: .crc64nvme, value: "VARHDQ==", expected: nil),
        Case(name: "not base64", algorithm: .crc32c, value: "4pyT!!==", expected: nil),
        Case(name: "empty", algorithm: .crc32, value: "", expected: nil),
    ]

    @Test(arguments: cases)
    func readsWhatAHeaderSays(_ example: Case) {
        #expect(S3Checksum.read(algorithm: example.algorithm, value: example.value, type: example.type, etag: example.etag)
            == example.expected)
    }

    @Test func multipartETagsGiveTheirPartCount() {
        #expect(S3Checksum.multipartParts(Self.multipartETag) == 3)
        #expect(S3Checksum.multipartParts("\"900150983cd24fb0d6963f7d28e17f72\"") == nil)
        #expect(S3Checksum.multipartParts("W/\"v-2\"") == nil)
        #expect(S3Checksum.multipartParts("\"-4\"") == nil)
    }

    static func head(_ lines: [String]) -> ResponseHead {
        var head = ResponseHead()
        for line in ["HTTP/1.1 200 OK"] + lines + [""] { head.consume(line: line + "\r\n") }
        return head
    }

    /// Whole-object checksums become advertised digests named by their header; composite ones
    /// are kept apart, and the download's note says they were not checked.
    @Test func theParserSplitsWholeObjectFromCompositeChecksums() throws {
        let whole = Self.head(["ETag: \"900150983cd24fb0d6963f7d28e17f72\"", "x-amz-checksum-crc32c: 4waSgw==",
                               "x-amz-checksum-type: FULL_OBJECT"])
        #expect(AdvertisedDigestParser.parse(whole) == [AdvertisedDigest(algorithm: .crc32c, hex: "e3069283",
                                                                         header: "x-amz-checksum-crc32c")])
        #expect(AdvertisedDigestParser.compositeChecksums(whole).isEmpty)
        let composite = Self.head(["ETag: \(Self.multipartETag)", "x-amz-checksum-sha256: \(Self.shaBase64)-3",
                                   "x-amz-checksum-type: COMPOSITE"])
        #expect(AdvertisedDigestParser.parse(composite).isEmpty)
        #expect(AdvertisedDigestParser.compositeChecksums(composite)
            == [CompositeChecksum(header: "x-amz-checksum-sha256", algorithm: .sha256, hex: Self.sha.hex, parts: 3)])
        let remote = RemoteFile(url: "http://127.0.0.1:9/models/m.bin", size: 10, acceptsRanges: true, suggestedName: "m.bin",
                                advertisedDigests: [], compositeChecksums: AdvertisedDigestParser.compositeChecksums(composite))
        let warning = try #require(remote.compositeChecksumWarnings().first)
        #expect(warning.isRoutine && warning.kind == "checksum_not_whole_file")
        #expect(warning.message.contains("x-amz-checksum-sha256") && warning.message.contains("not checked"), "\(warning.message)")
        // Known part sizes: checked, so no note, unless the file is streamed (not read again).
        var sized = remote
        sized.compositeChecksums?[0].partSizes = [4, 6]
        #expect(sized.compositeChecksumWarnings().isEmpty && sized.compositeChecksumWarnings(streaming: true).count == 1)
        // Expected digests take the whole-object checksum, naming its header.
        var options = DownloadOptions()
        options.verifyAdvertisedDigests = true
        let file = RemoteFile(url: "http://127.0.0.1:9/f", size: 9, acceptsRanges: true, suggestedName: "f",
                              advertisedDigests: AdvertisedDigestParser.parse(whole))
        let expected = options.expectedDigests(for: file)
        #expect(expected.count == 1 && expected[0].0.algorithm == .crc32c && expected[0].1.contains("x-amz-checksum-crc32c"))
    }

    /// `x-amz-checksum-mode: ENABLED` goes on requests for an s3:// object, among the signed
    /// headers (S3 refuses an x-amz- field it was not signed over), and not to another origin.
    @Test func checksumModeIsSentSignedToTheStoreOnly() throws {
        var options = RequestOptions()
        options.s3Signer = SigV4Signer(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1")
        options.s3ChecksumMode = true
        options.netrc = false
        try options.bindSecrets(to: "http://127.0.0.1:9000/models/key")
        let own = options.headerLines(url: "http://127.0.0.1:9000/models/key", time: 1_700_000_000)
        #expect(own.contains("x-amz-checksum-mode: ENABLED"))
        let authorization = try #require(own.first { $0.hasPrefix("Authorization:") })
        #expect(authorization.contains("SignedHeaders=host;x-amz-checksum-mode;x-amz-content-sha256;x-amz-date"), "\(authorization)")
        let other = options.headerLines(url: "http://127.0.0.2:9000/f", time: 1_700_000_000)
        #expect(!other.contains { $0.lowercased().hasPrefix("x-amz-") }, "\(other)")
        // Unsigned (a public bucket): the header alone.
        options.s3Signer = nil
        #expect(options.headerLines(url: "http://127.0.0.1:9000/models/key", time: 0) == ["x-amz-checksum-mode: ENABLED"])
    }

    /// A composite checksum is the algorithm over the parts' checksums joined: computed from a
    /// file by part sizes, and a file with a byte changed in one part no longer matches.
    @Test(arguments: [DigestAlgorithm.sha256, .crc32c, .crc64nvme])
    func compositeChecksumsAreComputedPartByPart(algorithm: DigestAlgorithm) throws {
        let directory = try TemporaryDirectory("rf-composite")
        let path = directory.file("f.bin")
        var bytes = Array("123456789".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var joined: [UInt8] = []
        for part in [bytes[0..<3], bytes[3..<9]] {
            let digest = Digest(algorithm)
            digest.update(Array(part))
            joined += digest.finalize().bytes
        }
        let outer = Digest(algorithm)
        outer.update(joined)
        let expected = outer.finalize()
        let file = try PartialFile(path: path, readOnly: true)
        #expect(try CompositeChecksumCheck.compute(algorithm, file: file, partSizes: [3, 6]) == expected)
        file.close()
        let composite = CompositeChecksum(header: "x-amz-checksum-\(algorithm.rawValue)", algorithm: algorithm, hex: expected.hex,
                                          parts: 2, partSizes: [3, 6])
        let good = try PartialFile(path: path, readOnly: true)
        #expect(try CompositeChecksumCheck.verify([composite], file: good, path: path, cancellation: nil).count == 1)
        good.close()
        bytes[7] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let changed = try PartialFile(path: path, readOnly: true)
        defer { changed.close() }
        do {
            _ = try CompositeChecksumCheck.verify([composite], file: changed, path: path, cancellation: nil)
            Issue.record("a changed part passed")
        } catch {
            #expect(error.code == .checksumMismatch)
            #expect(error.message.contains("x-amz-checksum-\(algorithm.rawValue) header, composite of 2 parts"), "\(error.message)")
        }
    }
}
