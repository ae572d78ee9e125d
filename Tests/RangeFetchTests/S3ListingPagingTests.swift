import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Listings: a repeated continuation token ends the listing; url-encoded keys are decoded.
struct S3ListingPagingTests {
    @Test(arguments: [
        ([String?](), String?.none, false),
        ([], "a", false),
        (["a"], "b", false),
        (["a", "b"], "a", true),
        (["a"], "a", true),
    ])
    func aTokenAlreadyFollowedIsAnError(before: [String?], next: String?, fails: Bool) throws {
        var pager = ListingPager(what: "s3://b/p/")
        for token in before { _ = try pager.next(token) }
        do {
            let token = try pager.next(next)
            #expect(!fails)
            #expect(token == next)
        } catch {
            #expect(fails)
            #expect(error.code == .protocolViolation)
            #expect(error.message.contains("s3://b/p/") && error.message.contains("same continuation token twice"), "\(error.message)")
        }
    }

    @Test(arguments: [
        ("plain/key.bin", "plain/key.bin"),
        ("a+b%20c", "a b c"),
        ("ctl%01key%1B", "ctl\u{1}key\u{1B}"),
        ("dots/../x", "dots/../x"),
        ("%E6%97%A5%2B", "日+"),
        ("%4", nil),
        ("%zz", nil),
        ("%FF", nil),
    ])
    func urlEncodedKeysDecodeAsBotocoreReadsThem(encoded: String, decoded: String?) {
        #expect(ListingKeyDecoding.decode(encoded) == decoded)
    }

    @Test func aPageWithEncodingTypeURLGivesDecodedKeys() throws {
        let page = """
        <ListBucketResult><EncodingType>url</EncodingType><Prefix>p%2F</Prefix><IsTruncated>false</IsTruncated>
        <Contents><Key>p/bell%07.bin</Key><Size>3</Size></Contents>
        <Contents><Key>p/a+b.bin</Key><Size>1</Size></Contents></ListBucketResult>
        """
        let (objects, _) = try S3Client.parseListing(Array(page.utf8), what: "s3://b/p/")
        #expect(objects.map(\.key) == ["p/bell\u{7}.bin", "p/a b.bin"])
    }

    @Test func aPageWithoutEncodingTypeKeepsKeysAsSent() throws {
        let page = "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p/a+b%20.bin</Key><Size>1</Size></Contents></ListBucketResult>"
        let (objects, _) = try S3Client.parseListing(Array(page.utf8), what: "s3://b/p/")
        #expect(objects.map(\.key) == ["p/a+b%20.bin"])
    }

    @Test func theListingAsksForURLEncodedKeys() {
        let url = S3Configuration(signer: nil, region: "us-east-1", endpoint: "http://127.0.0.1:1")
            .listURL(bucket: "b", prefix: "p/", continuationToken: nil)
        #expect(url.contains("encoding-type=url"), "\(url)")
    }

    @Test func aPageSizeIsAskedForOnlyWhenGiven() {
        let configuration = S3Configuration(signer: nil, region: "us-east-1", endpoint: "http://127.0.0.1:1")
        #expect(!configuration.listURL(bucket: "b", prefix: "p/", continuationToken: nil).contains("max-keys"))
        #expect(configuration.listURL(bucket: "b", prefix: "p/", continuationToken: "t", maxKeys: 40)
            == "http://127.0.0.1:1/b/?encoding-type=url&list-type=2&prefix=p%2F&continuation-token=t&max-keys=40")
    }
}

/// A store whose listing never ends (every page truncated with the same token), from our fault
/// server: the prefix batch stops at the second page with an error naming the prefix, instead of
/// asking forever.
@Suite(.serialized)
final class LoopingListingTests {
    let server: FaultServer

    init() throws { server = try FaultServer() }

    deinit { server.stop() }

    /// A signed request is never followed to another host: the endpoint's redirect is reported,
    /// and no request reaches the other host with a signature or the session token.
    @Test func aSignedRequestIsNotFollowedOffTheEndpoint() throws {
        let out = try TemporaryDirectory("rf-moved")
        let environment = ["AWS_ENDPOINT_URL": server.baseURL, "AWS_ACCESS_KEY_ID": "AKIDMOVED", "AWS_SECRET_ACCESS_KEY": "s3cretmoved",
                           "AWS_SESSION_TOKEN": "TOKENMOVED", "AWS_REGION": "us-east-1", "AWS_PROFILE": "", "HOME": out.path]
        let result = try runCLI(["--no-config", "s3://movedbucket/k.bin", "-o", out.file("k.bin")],
                                environment: environment, timeoutSeconds: 30)
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("HTTP 301") && result.stderr.contains("signed requests are not followed"), "\(result.stderr)")
        let elsewhere = try server.stats().log.filter { $0.host?.hasPrefix("localhost") == true }
        #expect(elsewhere.isEmpty, "\(elsewhere.count) requests went to the other host")
        #expect(!FileManager.default.fileExists(atPath: out.file("k.bin")))
    }

    @Test func aRepeatedContinuationTokenEndsTheListingWithAnError() throws {
        let out = try TemporaryDirectory("rf-loop")
        let environment = ["AWS_ENDPOINT_URL": server.baseURL, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
                           "AWS_REGION": "us-east-1", "AWS_PROFILE": "", "HOME": out.path]
        let result = try runCLI(["--no-config", "s3://loopingbucket/p/", "--no-sign-request", "-d", out.path],
                                environment: environment, timeoutSeconds: 30)
        #expect(result.status != 0)
        #expect(result.stderr.contains("s3://loopingbucket/p/") && result.stderr.contains("same continuation token"),
                "\(result.stderr)")
        // The listing's requests (the first page's object is fetched too, as the listing goes on).
        let pages = try server.stats().log.filter { $0.path == "/loopingbucket/" }.count
        #expect(pages == 2, "\(pages) listing pages asked for")
    }
}
