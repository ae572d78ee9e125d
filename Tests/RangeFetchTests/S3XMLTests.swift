import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// S3's XML answers read through libxml2 (opened at first use, never linked).
struct S3XMLTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aListingPageGivesKeysSizesETagsAndTheNextToken() throws {
        let page = """
        <?xml version="1.0" encoding="UTF-8"?>
        <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Name>models</Name><Prefix>llm/</Prefix><KeyCount>3</KeyCount><IsTruncated>true</IsTruncated>
          <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
          <Contents><Key>llm/a &amp; b.bin</Key><Size>5</Size><ETag>&quot;9a0364b9e99bb480dd25e1f0284c8555&quot;</ETag></Contents>
          <Contents><Key><![CDATA[llm/<odd>.bin]]></Key><Size>0</Size><ETag/></Contents>
          <Contents><Key>llm/big.bin</Key><Size>9000000000</Size><ETag>"d41d8cd98f00b204e9800998ecf8427e-12"</ETag></Contents>
        </ListBucketResult>
        """
        let (objects, token) = try S3Client.parseListing(bytes(page), what: "s3://models/llm/")
        #expect(objects.map(\.key) == ["llm/a & b.bin", "llm/<odd>.bin", "llm/big.bin"])
        #expect(objects.map(\.size) == [5, 0, 9_000_000_000])
        #expect(objects[0].md5 == "9a0364b9e99bb480dd25e1f0284c8555")
        #expect(objects[1].md5 == nil)
        #expect(objects[2].md5 == nil, "a multipart ETag is not an MD5")
        #expect(token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
    }

    @Test func theLastPageHasNoToken() throws {
        let page = "<ListBucketResult><IsTruncated>false</IsTruncated><NextContinuationToken>x</NextContinuationToken></ListBucketResult>"
        let (objects, token) = try S3Client.parseListing(bytes(page), what: "s3://b/")
        #expect(objects.isEmpty && token == nil)
    }

    @Test(arguments: [
        ("<ListBucketResult><Contents><Key>a</Key></Contents>", "not well-formed XML"),
        ("not xml at all", "not well-formed XML"),
        ("", "not well-formed XML"),
        ("<Error><Code>AccessDenied</Code></Error>", "not a ListBucketResult"),
        ("<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>", "no Key or Size"),
        ("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "no continuation token"),
    ])
    func aBrokenListingIsAProtocolErrorNamingThePrefix(page: String, says: String) {
        #expect {
            _ = try S3Client.parseListing(bytes(page), what: "s3://b/p/")
        } throws: { error in
            guard let error = error as? DownloadError else { return false }
            return error.category == .network && error.message.hasPrefix("s3://b/p/: ") && error.message.contains(says)
        }
    }

    @Test func errorBodiesGiveCodeAndMessage() {
        let body = "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message><RequestId>1</RequestId></Error>"
        #expect(S3Client.errorDetail(bytes(body)) == "SignatureDoesNotMatch (The request signature we calculated does not match)")
        #expect(S3Client.errorDetail(bytes("<Error><Code>NoSuchKey</Code></Error>")) == "NoSuchKey")
        #expect(S3Client.errorDetail(bytes("<html><body>403 Forbidden</body></html>")) == nil)
        #expect(S3Client.errorDetail(bytes("Forbidden")) == nil)
        #expect(S3Client.errorDetail([]) == nil)
    }

    /// No external entity or DTD is fetched or expanded (no network, no local files).
    @Test func externalEntitiesAreNotRead() throws {
        let page = """
        <?xml version="1.0"?><!DOCTYPE r [<!ENTITY secret SYSTEM "file:///etc/hostname">]>
        <ListBucketResult><Contents><Key>k&secret;</Key><Size>1</Size></Contents></ListBucketResult>
        """
        let (objects, _) = try S3Client.parseListing(bytes(page), what: "s3://b/")
        #expect(objects.map(\.key) == ["k"])
    }
}

/// What the binary loads at start-up is resident in every download: Foundation's full module and
/// an XML stack (FoundationXML, libxml2, ICU) cost ~9 MiB of RSS before the first byte, so the
/// CLI links FoundationEssentials only and opens libxml2 when an S3 answer needs reading.
struct StartupFootprintTests {
    @Test func theBinaryLinksNeitherFullFoundationNorAnXMLStack() throws {
        let ldd = try TestProcess.run("/usr/bin/ldd", [try TestProcess.rangefetchBinary])
        #expect(ldd.status == 0, "\(ldd.stderr)")
        let libraries = ldd.stdout.split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
        let heavy = libraries.filter {
            ["libFoundation.so", "libFoundationXML.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"].contains($0)
                || $0.hasPrefix("libxml2") || $0.hasPrefix("libicu")
        }
        #expect(heavy.isEmpty, "rangefetch links \(heavy): an `import Foundation` (or a package importing it) crept in")
        #expect(libraries.contains { $0.hasPrefix("libcurl") })
    }
}
