import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

struct ByteCountTests {
    static let sizes: [(String, Int64)] = [
        ("0", 0), ("1", 1), ("512k", 512 * 1024), ("4M", 4 << 20), ("1.5G", 3 << 29),
        ("2MiB", 2 << 20), ("10MB", 10 << 20), (" 7 ", 7), ("1T", 1 << 40),
    ]

    @Test(arguments: sizes)
    func parsesSizesWithBinarySuffixes(text: String, bytes: Int64) {
        #expect(ByteCount.parse(text) == bytes)
    }

    @Test(arguments: ["", "-1", "M", "1X", "abc", "1..2M", "99999999999T"])
    func rejectsWhatIsNotASize(text: String) {
        #expect(ByteCount.parse(text) == nil)
    }

    @Test func formatsWithBinaryUnits() {
        #expect(ByteCount.format(512) == "512 B")
        #expect(ByteCount.format(1536) == "1.5 KiB")
        #expect(ByteCount.format(1 << 30) == "1.0 GiB")
    }
}

struct ContentRangeTests {
    @Test func parsesSatisfiedRanges() {
        #expect(ContentRange(header: "bytes 0-9/100") == ContentRange(range: ByteRange(0, 10), completeLength: 100))
        #expect(ContentRange(header: "bytes 99-99/100")?.range == ByteRange(99, 100))
        #expect(ContentRange(header: "bytes 0-9/*") == ContentRange(range: ByteRange(0, 10), completeLength: nil))
        #expect(ContentRange(header: "Bytes 5000000000-5000000001/6000000000")?.range == ByteRange(5_000_000_000, 5_000_000_002))
    }

    @Test func parsesUnsatisfiedForm() {
        #expect(ContentRange(header: "bytes */100") == ContentRange(range: nil, completeLength: 100))
    }

    @Test(arguments: ["", "bytes", "bytes 9-0/100", "bytes 0-100/100", "items 0-9/100", "bytes 0-9", "bytes -1-9/100",
                      "bytes 0-9/abc", "bytes */*", "bytes 0 - 9/100"])
    func rejectsMalformedValues(header: String) {
        #expect(ContentRange(header: header) == nil)
    }
}

struct ResponseHeadTests {
    @Test func keepsOnlyTheLastResponseAfterRedirects() {
        var head = ResponseHead()
        for line in ["HTTP/1.1 302 Found\r\n", "Location: /x\r\n", "ETag: \"old\"\r\n", "\r\n",
                     "HTTP/1.1 206 Partial Content\r\n", "Content-Range: bytes 0-9/20\r\n", "content-length: 10\r\n",
                     "X-A: 1\r\n", "x-a: 2\r\n", "\r\n"] {
            head.consume(line: line)
        }
        #expect(head.status == 206)
        #expect(head["etag"] == nil)
        #expect(head.contentLength == 10)
        #expect(head.contentRange?.range == ByteRange(0, 10))
        #expect(head["x-a"] == "1, 2")
        #expect(head.isComplete)
    }

    @Test func identityIsNotAContentEncoding() {
        var head = ResponseHead()
        head.consume(line: "Content-Encoding: identity\r\n")
        #expect(!head.hasContentEncoding)
        head.consume(line: "HTTP/1.1 200 OK\r\n")
        head.consume(line: "Content-Encoding: gzip\r\n")
        #expect(head.hasContentEncoding)
    }
}

struct FileNameTests {
    static let names: [(String, String)] = [
        ("report.pdf", "report.pdf"), ("../../etc/passwd", "passwd"), ("..", "download"), ("", "download"),
        ("a/b\\c.txt", "c.txt"), ("evil\u{0}name\n.bin", "evilname.bin"), ("  spaced.txt ", "spaced.txt"), ("/", "download"),
        (".bashrc", "bashrc"), ("...", "download"),
    ]

    @Test(arguments: names)
    func sanitisingNeverEscapesTheDirectory(raw: String, safe: String) {
        #expect(FileName.sanitize(raw) == safe)
    }

    @Test func readsContentDisposition() {
        #expect(FileName.fromContentDisposition("attachment; filename=\"a b.zip\"") == "a b.zip")
        #expect(FileName.fromContentDisposition("attachment; filename=plain.txt") == "plain.txt")
        #expect(FileName.fromContentDisposition("attachment; filename=\"x.bin\"; filename*=UTF-8''na%C3%AFve.bin") == "naïve.bin")
        #expect(FileName.fromContentDisposition("attachment; filename=\"semi;colon.txt\"") == "semi;colon.txt")
        #expect(FileName.fromContentDisposition("inline") == nil)
    }

    @Test func readsTheURLPath() {
        #expect(FileName.fromURLPath("/files/big%20file.iso") == "big file.iso")
        #expect(FileName.fromURLPath("/dir/") == nil)
        #expect(FileName.fromURLPath("/a/b.tar.gz") == "b.tar.gz")
    }
}

struct RetryPolicyTests {
    @Test func delaysDoubleUpToTheCapAndHonourRetryAfter() {
        let policy = RetryPolicy()
        #expect(policy.delay(beforeRetry: 1, retryAfterSeconds: nil, jitter: 1) == 0.5)
        #expect(policy.delay(beforeRetry: 2, retryAfterSeconds: nil, jitter: 1) == 1)
        #expect(policy.delay(beforeRetry: 5, retryAfterSeconds: nil, jitter: 1) == 8)
        #expect(policy.delay(beforeRetry: 9, retryAfterSeconds: nil, jitter: 1) == 16)
        #expect(policy.delay(beforeRetry: 3, retryAfterSeconds: nil, jitter: 0) == 1)
        #expect(policy.delay(beforeRetry: 1, retryAfterSeconds: 7, jitter: 0) == 7)
        #expect(policy.delay(beforeRetry: 1, retryAfterSeconds: 9999, jitter: 0) == 120)
        #expect(RetryPolicy.retryAfterSeconds(" 3 ") == 3)
        #expect(RetryPolicy.retryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
    }
}
