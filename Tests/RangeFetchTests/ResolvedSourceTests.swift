import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The user's text parsed once into where requests go and what they carry (``ResolvedSource``):
/// every form a download or a listing takes, and the same refusals ``SourceAddress`` gives. No sockets.
struct ResolvedSourceTests {
    static let endpoint = "http://127.0.0.1:9000"
    static let signer = SigV4Signer(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret-key", region: "us-east-1")
    static let configuration = S3Configuration(signer: signer, region: "us-east-1", endpoint: endpoint)

    /// Request options that read no netrc file of the machine's.
    static var request: RequestOptions {
        var request = RequestOptions()
        request.netrc = false
        return request
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var text: String
        /// Resolved as a prefix to list rather than an object to download.
        var prefix = false
        /// The URL requests go to; `nil` when the text is refused.
        var requestURL: String?
        /// The origin secrets are bound to.
        var origin: String? = nil
        var signed = false
        /// The refusal's code and words its message carries.
        var code: DownloadError.Code? = nil
        var says: String? = nil
        var testDescription: String { (prefix ? "prefix " : "") + (text.isEmpty ? "(empty)" : text) }
    }

    static let cases: [Case] = [
        Case(text: "http://127.0.0.1:8080/a.bin", requestURL: "http://127.0.0.1:8080/a.bin", origin: "http://127.0.0.1:8080"),
        Case(text: "https://example.com/f.iso?id=1", requestURL: "https://example.com/f.iso?id=1", origin: "https://example.com:443"),
        Case(text: "s3://models/llama/weights.bin", requestURL: "\(endpoint)/models/llama/weights.bin",
             origin: endpoint, signed: true),
        Case(text: "s3://models/a b+c.bin", requestURL: "\(endpoint)/models/a%20b%2Bc.bin", origin: endpoint, signed: true),
        Case(text: "s3://models/llama/", code: .invalidURL, says: "s3://models/llama/ names a prefix, not an object"),
        Case(text: "s3://models/llama/", prefix: true, requestURL: "\(endpoint)/models/", origin: endpoint, signed: true),
        Case(text: "s3://models", prefix: true, requestURL: "\(endpoint)/models/", origin: endpoint, signed: true),
        Case(text: "s3://models/a.bin", prefix: true, code: .invalidURL, says: "s3://models/a.bin: not an s3://BUCKET/PREFIX/ URL"),
        Case(text: "https://h/dir/", prefix: true, code: .invalidURL, says: "https://h/dir/: not an s3://BUCKET/PREFIX/ URL"),
        Case(text: "s3://", code: .invalidURL, says: "no bucket (expected s3://BUCKET/KEY)"),
        Case(text: "ftp://example.com/f", code: .unsupportedScheme, says: "unsupported scheme 'ftp' (expected http://, https:// or s3://)"),
        Case(text: "FTP://user:secret@example.com/f", code: .unsupportedScheme, says: "FTP://user:REDACTED@example.com/f"),
        Case(text: "example.com/file", code: .invalidURL, says: "not a URL (expected http://, https:// or s3://)"),
        Case(text: "", code: .invalidURL, says: "not a URL"),
        Case(text: "http://", code: .invalidURL, says: "malformed URL"),
    ]

    static func resolve(_ example: Case, s3: S3ConfigurationOnce) throws(DownloadError) -> ResolvedSource {
        example.prefix ? try ResolvedSource(prefix: example.text, request: request, s3: s3)
            : try ResolvedSource(object: example.text, request: request, s3: s3)
    }

    @Test(arguments: cases)
    func resolvesOnceOrRefusesAsTheAddressDoes(_ example: Case) {
        do {
            let source = try Self.resolve(example, s3: S3ConfigurationOnce(given: Self.configuration))
            #expect(example.requestURL != nil, "resolved what should be refused: \(source.requestURL)")
            #expect(source.text == example.text)
            #expect(source.requestURL == example.requestURL)
            #expect(source.request.scope.origin == example.origin)
            #expect((source.request.s3Signer != nil) == example.signed)
            #expect(source.s3 == (example.signed ? Self.configuration : nil))
            // Only an object asks for its checksums.
            #expect(source.request.s3ChecksumMode == (example.signed && !example.prefix))
            // The journal knows the download by the user's text, not the endpoint's URL.
            #expect(source.journalURL == example.text)
        } catch {
            #expect(example.requestURL == nil, "refused: \(error.message)")
            #expect(error.code == example.code, "\(error.message)")
            if let says = example.says { #expect(error.message.contains(says), "\(error.message)") }
            #expect(!error.message.contains("secret"), "\(error.message)")
            // The same refusal as the address's own, where the address refuses the text.
            if !example.prefix, let addressError = Self.addressError(example.text) {
                #expect(error == addressError)
            }
        }
    }

    static func addressError(_ text: String) -> DownloadError? {
        do { _ = try SourceAddress(text); return nil } catch { return error }
    }

    /// A batch's configuration is for its `s3://` files: an HTTP(S) source carries none, and asks
    /// for none to be read.
    @Test func anHTTPSourceNeitherCarriesNorReadsTheS3Configuration() throws {
        let once = S3ConfigurationOnce(given: nil, load: { () throws(DownloadError) in Self.configuration })
        let source = try ResolvedSource(object: "https://h/f", request: Self.request, s3: once)
        #expect(source.s3 == nil && source.request.s3Signer == nil)
        #expect(once.reads == 0)
        var options = DownloadOptions()
        options.s3 = Self.configuration
        #expect(options.bound(to: source).s3 == nil)
    }

    /// The endpoint's URL comes from the configuration: one that is not HTTP(S) is refused as any URL.
    @Test func anEndpointThatIsNoHTTPURLIsRefused() {
        let ftp = S3Configuration(signer: Self.signer, region: "us-east-1", endpoint: "ftp://127.0.0.1")
        #expect(throws: DownloadError.self) {
            try ResolvedSource(object: "s3://b/k", request: Self.request, s3: S3ConfigurationOnce(given: ftp))
        }
    }

    /// Secrets bound to the source's origin stay there: the user's headers go to the endpoint, not elsewhere.
    @Test func secretsAreBoundToTheURLRequested() throws {
        var request = Self.request
        request.headers = ["Authorization: Bearer t0ken"]
        let source = try ResolvedSource(object: "s3://b/k", request: request, s3: S3ConfigurationOnce(given: Self.configuration))
        #expect(source.request.scope.grant(for: "\(Self.endpoint)/b/other").userSecrets)
        #expect(!source.request.scope.grant(for: "http://127.0.0.2:9000/b/k").userSecrets)
    }
}
