import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The signer against AWS's published Signature Version 4 examples.
struct SigV4Tests {
    /// AWS's "Signature Version 4 signing process" example (IAM ListUsers, 2015-08-30 12:36:00 UTC).
    @Test func matchesAWSsPublishedIAMExample() {
        let signer = SigV4Signer(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                 region: "us-east-1", service: "iam")
        let time = 1_440_938_160 // 20150830T123600Z
        #expect(SigV4Signer.amzDate(time) == "20150830T123600Z")
        let authorization = signer.authorization(
            method: "GET", url: "https://iam.amazonaws.com/?Version=2010-05-08&Action=ListUsers",
            headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8"), ("X-Amz-Date", "20150830T123600Z")],
            payloadHash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", time: time)
        #expect(authorization == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7")
    }

    /// S3's documented example: GET /test.txt with a Range, 2013-05-24.
    @Test func matchesS3sPublishedGetObjectExample() {
        let signer = SigV4Signer(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                 region: "us-east-1")
        let time = 1_369_353_600 // 20130524T000000Z
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        let authorization = signer.authorization(
            method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt",
            headers: [("Range", "bytes=0-9"), ("x-amz-content-sha256", empty), ("x-amz-date", "20130524T000000Z")],
            payloadHash: empty, time: time)
        #expect(authorization.hasSuffix("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), "\(authorization)")
    }

    @Test func encodesLikeAWS() {
        #expect(SigV4Signer.encode("a b/c~d+é") == "a%20b%2Fc~d%2B%C3%A9")
        #expect(SigV4Signer.encode("dir/sub key.bin", keepSlash: true) == "dir/sub%20key.bin")
    }

    @Test func presignedURLsTellWhenTheyExpire() {
        let v4 = "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20150830T123600Z&X-Amz-Expires=60&X-Amz-Signature=ab"
        #expect(PresignedURL.expiry(v4) == 1_440_938_160 + 60)
        #expect(PresignedURL.expiredNote(v4, now: 1_440_938_160 + 61)?.contains("expired 1 s ago") == true)
        #expect(PresignedURL.expiredNote(v4, now: 1_440_938_160 + 59) == nil)
        #expect(PresignedURL.expiry("https://b.s3.amazonaws.com/k?AWSAccessKeyId=A&Signature=x&Expires=1700000000") == 1_700_000_000)
        #expect(PresignedURL.expiry("https://example.com/file?Expires=5") == nil)
    }
}
