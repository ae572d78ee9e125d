import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// What a journal knows a download by (``JournalIdentity``): a presigned link signed again is the
/// same download, two URLs that differ in a secret value are two, and no secret is written. Tables only.
struct JournalIdentityTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var url: String
        /// ``JournalIdentity/unsigned(_:)``.
        var unsigned: String
        /// ``JournalIdentity/url``.
        var shown: String
        var digested: Bool
        var testDescription: String { url }
    }

    static let cases: [Case] = [
        Case(url: "https://h/f.bin", unsigned: "https://h/f.bin", shown: "https://h/f.bin", digested: false),
        Case(url: "https://h/f.bin?id=1#top", unsigned: "https://h/f.bin?id=1#top", shown: "https://h/f.bin?id=1#top", digested: false),
        Case(url: "s3://bucket/key.bin", unsigned: "s3://bucket/key.bin", shown: "s3://bucket/key.bin", digested: false),
        // S3 SigV4 presigned: every signing parameter goes, the rest stays in its order.
        Case(url: "https://b.s3.amazonaws.com/k.bin?versionId=7&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20261127%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261127T100000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok&X-Amz-Signature=abc123&part=2",
             unsigned: "https://b.s3.amazonaws.com/k.bin?versionId=7&part=2", shown: "https://b.s3.amazonaws.com/k.bin?versionId=7&part=2",
             digested: false),
        Case(url: "https://b.s3.amazonaws.com/k.bin?x-amz-date=1&x-amz-signature=2",
             unsigned: "https://b.s3.amazonaws.com/k.bin", shown: "https://b.s3.amazonaws.com/k.bin", digested: false),
        // GCS V4 and V2, CloudFront.
        Case(url: "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=c&X-Goog-Date=d&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=s",
             unsigned: "https://storage.googleapis.com/b/o", shown: "https://storage.googleapis.com/b/o", digested: false),
        Case(url: "https://storage.googleapis.com/b/o?GoogleAccessId=sa&Expires=1700000000&Signature=s",
             unsigned: "https://storage.googleapis.com/b/o", shown: "https://storage.googleapis.com/b/o", digested: false),
        Case(url: "https://d111.cloudfront.net/f.bin?Expires=1700000000&Signature=s~&Key-Pair-Id=K2",
             unsigned: "https://d111.cloudfront.net/f.bin", shown: "https://d111.cloudfront.net/f.bin", digested: false),
        // Azure SAS, a user-delegation key's fields too.
        Case(url: "https://acct.blob.core.windows.net/c/f.bin?sv=2022-11-02&st=2026-11-27T10:00Z&se=2026-11-27T11:00Z&sr=b&sp=r&skoid=o&sktid=t&skt=a&ske=b&sks=b&skv=2022&sig=abc%3D",
             unsigned: "https://acct.blob.core.windows.net/c/f.bin", shown: "https://acct.blob.core.windows.net/c/f.bin", digested: false),
        // A parameter of a scheme's name without its signature is the URL's own.
        Case(url: "https://h/f?expires=soon&st=3", unsigned: "https://h/f?expires=soon&st=3",
             shown: "https://h/f?expires=soon&st=3", digested: false),
        // A secret that is no signature's stays in the identity, as a digest.
        Case(url: "https://h/get?code=A1", unsigned: "https://h/get?code=A1", shown: "https://h/get?code=REDACTED", digested: true),
        Case(url: "https://h/get?id=4&session=xyz", unsigned: "https://h/get?id=4&session=xyz",
             shown: "https://h/get?id=4&session=REDACTED", digested: true),
        Case(url: "https://u:pw@h/f", unsigned: "https://u:pw@h/f", shown: "https://u:REDACTED@h/f", digested: true),
        Case(url: "https://h/f?token=t&X-Amz-Date=1&X-Amz-Signature=2", unsigned: "https://h/f?token=t",
             shown: "https://h/f?token=REDACTED", digested: true),
    ]

    @Test(arguments: cases)
    func leavesOutOnlyWhatSigningChangesAndWritesNoSecret(_ example: Case) {
        #expect(JournalIdentity.unsigned(example.url) == example.unsigned)
        let identity = JournalIdentity(example.url)
        #expect(identity.url == example.shown)
        #expect((identity.digest != nil) == example.digested)
        if let digest = identity.digest {
            #expect(digest.count == 64 && digest.allSatisfy(\.isHexDigit))
        }
        for secret in ["A1", "xyz", ":pw@", "abc123", "=tok", "token=t"] {
            #expect(!identity.url.contains(secret), "\(identity.url)")
        }
    }

    @Test func aLinkSignedAgainIsTheSameDownload() {
        let first = JournalIdentity("https://b.s3.amazonaws.com/k.bin?X-Amz-Date=20261127T100000Z&X-Amz-Expires=60&X-Amz-Signature=aaaa")
        let again = JournalIdentity("https://b.s3.amazonaws.com/k.bin?X-Amz-Date=20261127T110000Z&X-Amz-Expires=3600&X-Amz-Signature=bbbb")
        #expect(first == again)
    }

    @Test func urlsThatDifferOnlyInASecretAreTwoDownloads() {
        let a = JournalIdentity("https://h/get?code=AAAA")
        let b = JournalIdentity("https://h/get?code=BBBB")
        #expect(a.url == b.url)
        #expect(a.digest != b.digest)
        #expect(JournalIdentity("https://h/get?code=AAAA") == a)
    }
}
