import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Which text names a source, and what: one parse for the CLI, the -i list, the library and the
/// transfer's protocol list. No sockets.
struct SourceAddressTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var text: String
        /// `http`, `s3`, or `nil` when the text is refused.
        var kind: String?
        var isPrefix = false
        var origin: String? = nil
        var bucket: String? = nil
        var key: String? = nil
        /// The refusal's category of error and words its message carries.
        var code: DownloadError.Code? = nil
        var says: String? = nil
        var testDescription: String { text.isEmpty ? "(empty)" : text }
    }

    static let cases: [Case] = [
        Case(text: "http://127.0.0.1:8080/a", kind: "http", origin: "http://127.0.0.1:8080"),
        Case(text: "https://example.com/f.iso", kind: "http", origin: "https://example.com:443"),
        Case(text: "HTTPS://Example.COM/F.iso", kind: "http", origin: "https://example.com:443"),
        Case(text: "http://user:p%40ss@example.com/f", kind: "http", origin: "http://example.com:80"),
        Case(text: "http://[::1]:8080/f", kind: "http", origin: "http://[::1]:8080"),
        Case(text: "https://h/get?id=1&sig=abc", kind: "http", origin: "https://h:443"),
        Case(text: "s3://models/llama/weights.bin", kind: "s3", bucket: "models", key: "llama/weights.bin"),
        Case(text: "S3://models/a.bin", kind: "s3", bucket: "models", key: "a.bin"),
        Case(text: "s3://models/llama/", kind: "s3", isPrefix: true, bucket: "models", key: "llama/"),
        Case(text: "s3://models", kind: "s3", isPrefix: true, bucket: "models", key: ""),
        Case(text: "s3://", code: .invalidURL, says: "no bucket (expected s3://BUCKET/KEY)"),
        Case(text: "s3:///key.bin", code: .invalidURL, says: "no bucket"),
        Case(text: "ftp://example.com/f", code: .unsupportedScheme, says: "unsupported scheme 'ftp' (expected http://, https:// or s3://)"),
        Case(text: "file:///etc/passwd", code: .unsupportedScheme, says: "unsupported scheme 'file'"),
        Case(text: "FTP://user:secret@example.com/f", code: .unsupportedScheme, says: "FTP://user:REDACTED@example.com/f: unsupported scheme 'ftp'"),
        Case(text: "example.com/file", code: .invalidURL, says: "not a URL (expected http://, https:// or s3://)"),
        Case(text: "not a url", code: .invalidURL, says: "not a URL"),
        Case(text: "", code: .invalidURL, says: "not a URL"),
        Case(text: "://h/x", code: .invalidURL, says: "not a URL"),
        Case(text: "http://", code: .invalidURL, says: "malformed URL"),
        Case(text: "http://exa mple.com/", code: .invalidURL, says: "malformed URL"),
    ]

    @Test(arguments: cases)
    func parsesOrRefusesWithAMessageNamingTheText(_ example: Case) {
        do {
            let address = try SourceAddress(example.text)
            #expect(example.kind != nil, "accepted what should be refused: \(address)")
            #expect(address.text == example.text)
            #expect(address.isS3 == (example.kind == "s3"))
            #expect((address.http != nil) == (example.kind == "http"))
            #expect(address.isPrefix == example.isPrefix)
            #expect(address.origin == example.origin)
            #expect(address.s3?.bucket == example.bucket)
            #expect(address.s3?.key == example.key)
            #expect(address.journalURL == (example.kind == "s3" ? example.text : nil))
        } catch {
            #expect(example.kind == nil, "refused: \(error.message)")
            #expect(error.code == example.code, "\(error.message)")
            #expect(error.category == .usage)
            if let says = example.says { #expect(error.message.contains(says), "\(error.message)") }
            #expect(!error.message.contains("secret"), "\(error.message)")
        }
    }

    /// The S3 location of a text, told without parsing the rest (a name for every line of a
    /// list): the same as the address's, and `nil` where the address is no S3 one.
    @Test(arguments: cases)
    func theS3LocationAloneAgreesWithTheAddress(_ example: Case) {
        #expect(SourceAddress.s3Location(example.text) == (try? SourceAddress(example.text))?.s3)
    }

    @Test func userinfoIsSplitAndDecoded() throws {
        let parts = try #require(try SourceAddress("https://user:p%40ss@example.com/f").http)
        #expect(parts.user == "user")
        #expect(parts.password == "p@ss")
    }

    /// A mirror (or a bench target, or an s3 object's endpoint) must be HTTP(S) itself.
    @Test func anHTTPOnlyPlaceRefusesS3AndTakesHTTP() throws {
        #expect(try SourceAddress.http("http://127.0.0.1/x").http?.host == "127.0.0.1")
        for text in ["s3://models/a.bin", "ftp://h/x", "h/x"] {
            #expect(throws: DownloadError.self) { try SourceAddress.http(text) }
        }
        do {
            _ = try SourceAddress.http("s3://models/a.bin")
        } catch {
            #expect(error.code == .unsupportedScheme)
            #expect(error.message.contains("expected http:// or https://"), "\(error.message)")
        }
    }
}
