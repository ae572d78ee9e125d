import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``ResponseValidator`` as a table: one response head (and error body) in, one verdict out.
struct ResponseValidatorTests {
    static let url = "http://127.0.0.1/f.bin"
    static let date = "Sun, 22 Nov 2026 10:00:00 GMT"
    static let remote = RemoteFile(url: url, size: 1000, acceptsRanges: true, etag: "\"e1\"",
                                   lastModified: date, suggestedName: "f.bin", advertisedDigests: [])
    static let asked = ByteRange(100, 200)

    /// Verdicts by case name, payloads aside.
    enum Kind: String {
        case accept, retry, reResolve, excludeSource, pushback, oneStream, restartWhole, fatal, rejectRange
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var lines: [String]
        var asked: ByteRange? = ResponseValidatorTests.asked
        var toUserURL = false
        var body = ""
        var expected: Kind
        /// The error's message, where the case pins it down.
        var message: String? = nil
        var retryAfter: Double? = nil
        var testDescription: String { name }
    }

    static func head(_ lines: [String]) -> ResponseHead {
        var head = ResponseHead()
        for line in lines + [""] { head.consume(line: line + "\r\n") }
        return head
    }

    static func kind(_ verdict: ResponseVerdict) -> Kind {
        switch verdict {
        case .accept: .accept
        case .retry: .retry
        case .reResolve: .reResolve
        case .excludeSource: .excludeSource
        case .pushback: .pushback
        case .oneStream: .oneStream
        case .restartWhole: .restartWhole
        case .fatal: .fatal
        case .rejectRange: .rejectRange
        }
    }

    static func after(_ verdict: ResponseVerdict) -> Double? {
        switch verdict {
        case .retry(_, let after), .pushback(_, let after): after
        default: nil
        }
    }

    static let validators = ["ETag: \"e1\"", "Last-Modified: \(date)"]

    static let cases: [Case] = [
        Case(name: "206 with exactly the asked range is accepted",
             lines: ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000", "Content-Length: 100"] + validators,
             expected: .accept),
        Case(name: "206 with another range falls back to one stream",
             lines: ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-99/1000"] + validators,
             expected: .oneStream,
             message: "\(url): asked for bytes 100-199, server sent Content-Range 'bytes 0-99/1000'; its ranges cannot be trusted"),
        Case(name: "206 without Content-Range falls back to one stream",
             lines: ["HTTP/1.1 206 Partial Content"], expected: .oneStream),
        Case(name: "206 of a file of another size restarts the whole file",
             lines: ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/2000"] + validators,
             expected: .restartWhole,
             message: "\(url): file size changed on the server from 1000 to 2000 bytes."),
        Case(name: "200 to a range falls back to one stream",
             lines: ["HTTP/1.1 200 OK", "Content-Length: 1000"] + validators,
             expected: .oneStream, message: "\(url): server ignored the Range header (HTTP 200)"),
        Case(name: "an encoded range falls back to one stream",
             lines: ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000", "Content-Encoding: gzip"],
             expected: .oneStream,
             message: "\(url): server sent Content-Encoding gzip for a range; ranges of an encoded body are not ranges of the file"),
        Case(name: "200 to a plain request is accepted",
             lines: ["HTTP/1.1 200 OK", "Content-Length: 1000"] + validators, asked: nil, expected: .accept),
        Case(name: "200 of another length to a plain request restarts",
             lines: ["HTTP/1.1 200 OK", "Content-Length: 999"], asked: nil, expected: .restartWhole,
             message: "\(url): file size changed on the server from 1000 to 999 bytes."),
        Case(name: "416 of the announced size to a range inside it falls back to one stream",
             lines: ["HTTP/1.1 416 Range Not Satisfiable", "Content-Range: bytes */1000"], expected: .oneStream,
             message: "\(url): server refused range 100-199 of its 1000-byte file as not satisfiable (HTTP 416)"),
        Case(name: "416 without a size means the file changed",
             lines: ["HTTP/1.1 416 Range Not Satisfiable"], expected: .restartWhole),
        Case(name: "416 means the file changed",
             lines: ["HTTP/1.1 416 Range Not Satisfiable", "Content-Range: bytes */500"], expected: .restartWhole,
             message: "\(url): range 100-199 not satisfiable; the file on the server changed (was 1000 bytes)."),
        Case(name: "403 from a redirect target is re-resolved",
             lines: ["HTTP/1.1 403 Forbidden"], expected: .reResolve),
        Case(name: "401 from a redirect target is re-resolved",
             lines: ["HTTP/1.1 401 Unauthorized"], expected: .reResolve),
        Case(name: "410 from a redirect target is re-resolved",
             lines: ["HTTP/1.1 410 Gone"], expected: .reResolve),
        Case(name: "403 from the user's URL ends that source",
             lines: ["HTTP/1.1 403 Forbidden"], toUserURL: true, expected: .excludeSource,
             message: "\(url): server answered HTTP 403 (forbidden) for range 100-199"),
        Case(name: "400 saying ExpiredToken is re-resolved",
             lines: ["HTTP/1.1 400 Bad Request"], body: "<Error><Code>ExpiredToken</Code></Error>", expected: .reResolve),
        Case(name: "400 without an expiry body is fatal",
             lines: ["HTTP/1.1 400 Bad Request"], body: "<Error><Code>InvalidArgument</Code></Error>", expected: .fatal),
        Case(name: "404 is fatal",
             lines: ["HTTP/1.1 404 Not Found"], expected: .fatal,
             message: "\(url): server answered HTTP 404 (not found) for range 100-199"),
        Case(name: "429 with Retry-After pushes back for that long",
             lines: ["HTTP/1.1 429 Too Many Requests", "Retry-After: 7"], expected: .pushback, retryAfter: 7),
        Case(name: "429 without Retry-After pushes back",
             lines: ["HTTP/1.1 429 Too Many Requests"], expected: .pushback),
        Case(name: "503 with Retry-After pushes back for that long",
             lines: ["HTTP/1.1 503 Service Unavailable", "Retry-After: 3"], expected: .pushback, retryAfter: 3),
        Case(name: "503 without Retry-After pushes back",
             lines: ["HTTP/1.1 503 Service Unavailable"], expected: .pushback),
        Case(name: "500 is retried",
             lines: ["HTTP/1.1 500 Internal Server Error"], expected: .retry,
             message: "\(url): server answered HTTP 500 (server error) for range 100-199"),
        Case(name: "502 with Retry-After is retried after it",
             lines: ["HTTP/1.1 502 Bad Gateway", "Retry-After: 2"], expected: .retry, retryAfter: 2),
        Case(name: "a changed ETag restarts the whole file",
             lines: ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000", "ETag: \"e2\"",
                     "Last-Modified: Mon, 23 Nov 2026 10:00:00 GMT"],
             expected: .restartWhole,
             message: "\(url): file changed on the server (ETag \"e1\" became \"e2\", Last-Modified \(date) became Mon, 23 Nov 2026 10:00:00 GMT)"),
        Case(name: "another ETag with the same Last-Modified is accepted",
             lines: ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000", "ETag: \"other\"",
                     "Last-Modified: \(date)"],
             expected: .accept),
        Case(name: "another ETag and the whole file is asked again by date",
             lines: ["HTTP/1.1 200 OK", "Content-Length: 1000", "ETag: \"other\"", "Last-Modified: \(date)"],
             expected: .retry,
             message: "\(url): another origin answered with ETag \"other\" and the whole file; asking again with If-Range by date"),
        Case(name: "an unusable Content-Length is fatal whatever the status",
             lines: ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000", "Content-Length: -5"],
             expected: .fatal),
        Case(name: "an unfollowed redirect is fatal",
             lines: ["HTTP/1.1 301 Moved Permanently", "Location: http://127.0.0.1/elsewhere"], expected: .fatal),
    ]

    @Test(arguments: cases)
    func verdictFollowsTodaysRules(_ row: Case) {
        let validator = ResponseValidator(remote: Self.remote, asked: row.asked, toUserURL: row.toUserURL)
        let verdict = validator.verdict(Self.head(row.lines), errorBody: row.body)
        #expect(Self.kind(verdict) == row.expected)
        if let message = row.message { #expect(verdict.error?.message == message) }
        #expect(Self.after(verdict) == row.retryAfter)
        #expect((verdict.error == nil) == (row.expected == .accept))
    }

    struct ContentCase: CustomTestStringConvertible, Sendable {
        var name: String
        var proof: ContentProof
        var expected: Kind
        var message: String? = nil
        var testDescription: String { name }
    }

    static let contentCases: [ContentCase] = [
        ContentCase(name: "content matching its Content-Digest is accepted", proof: .matched, expected: .accept),
        ContentCase(name: "content that ended short is accepted unproven", proof: .unproven, expected: .accept),
        ContentCase(name: "content not matching its Content-Digest rejects the range",
                    proof: .mismatched(algorithm: .sha256, expected: "aa", actual: "bb"), expected: .rejectRange,
                    message: "\(url): the bytes 100-199 do not match the response's Content-Digest (sha256 aa announced, bb received)"),
    ]

    @Test(arguments: contentCases)
    func contentVerdictFollowsItsDigest(_ row: ContentCase) {
        let validator = ResponseValidator(remote: Self.remote, asked: Self.asked, toUserURL: false)
        let verdict = validator.verdict(content: row.proof)
        #expect(Self.kind(verdict) == row.expected)
        if let message = row.message { #expect(verdict.error?.message == message) }
        #expect(verdict.error?.code == (row.expected == .accept ? nil : .checksumMismatch))
    }

    @Test func anExpiredToken400IsOnlyKnownOnceItsBodyHasArrived() {
        let validator = ResponseValidator(remote: Self.remote, asked: Self.asked, toUserURL: false)
        let head = Self.head(["HTTP/1.1 400 Bad Request"])
        #expect(Self.kind(validator.verdict(head)) == .fatal)
        #expect(Self.kind(validator.verdict(head, errorBody: "<Code>ExpiredToken</Code>")) == .reResolve)
    }

    @Test func anotherOriginsETagIsNotedOnlyOnAUsableAnswer() {
        let validator = ResponseValidator(remote: Self.remote, asked: Self.asked, toUserURL: false)
        let other = ["ETag: \"other\"", "Last-Modified: \(Self.date)"]
        #expect(validator.carriesOtherETag(Self.head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000"] + other)))
        #expect(!validator.carriesOtherETag(Self.head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 100-199/1000"] + Self.validators)))
        #expect(!validator.carriesOtherETag(Self.head(["HTTP/1.1 404 Not Found"] + other)))
    }

    @Test func onlyRetryAndPushbackAreRetriable() {
        let error = DownloadError(.protocolViolation, "x")
        #expect(ResponseVerdict.retry(error, after: nil).isRetriable)
        #expect(ResponseVerdict.pushback(error, after: 1).isRetriable)
        for verdict in [ResponseVerdict.accept, .reResolve(error, status: 403), .excludeSource(error, status: 403),
                        .oneStream(error), .restartWhole(error), .fatal(error), .rejectRange(error)] {
            #expect(!verdict.isRetriable)
        }
    }
}
