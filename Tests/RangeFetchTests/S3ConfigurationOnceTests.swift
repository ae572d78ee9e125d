import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A run reads the S3 configuration at most once (``S3ConfigurationOnce``): not at all when one
/// is given or no `s3://` URL needs it, once for any number of `s3://` URLs, and a failure to
/// read it is the same failure for each. No sockets, no files.
struct S3ConfigurationOnceTests {
    static let configuration = S3Configuration(signer: nil, region: "eu-west-1", endpoint: "http://127.0.0.1:9000")
    static let request: RequestOptions = {
        var request = RequestOptions()
        request.netrc = false
        return request
    }()

    @Test func aGivenConfigurationIsUsedAndNothingIsRead() throws {
        let once = S3ConfigurationOnce(given: Self.configuration, load: { () throws(DownloadError) in
            throw DownloadError(.invalidOption, "must not be read")
        })
        #expect(try once.configuration() == Self.configuration)
        #expect(once.reads == 0)
    }

    @Test func manyS3SourcesOfOneRunReadItOnce() throws {
        let once = S3ConfigurationOnce(given: nil, load: { () throws(DownloadError) in Self.configuration })
        for key in ["a.bin", "b.bin", "dir/c.bin"] {
            let source = try ResolvedSource(object: "s3://bucket/\(key)", request: Self.request, s3: once)
            #expect(source.s3 == Self.configuration)
        }
        _ = try ResolvedSource(prefix: "s3://bucket/dir/", request: Self.request, s3: once)
        _ = try ResolvedSource(object: "http://127.0.0.1/x", request: Self.request, s3: once)
        #expect(once.reads == 1)
    }

    @Test func aFailureToReadItIsEverySourcesAndReadOnce() {
        let once = S3ConfigurationOnce(given: nil, load: { () throws(DownloadError) in
            throw DownloadError(.invalidOption, "s3:// URLs need credentials and there is no access key", remedy: .giveS3Credentials)
        })
        for key in ["a.bin", "b.bin"] {
            do {
                _ = try ResolvedSource(object: "s3://bucket/\(key)", request: Self.request, s3: once)
                Issue.record("resolved without a configuration")
            } catch {
                #expect(error.message.contains("need credentials"), "\(error.message)")
                #expect(error.remedy == .giveS3Credentials)
            }
        }
        #expect(once.reads == 1)
        // An HTTP(S) source of the same run is not touched by it.
        #expect((try? ResolvedSource(object: "https://h/f", request: Self.request, s3: once)) != nil)
    }

    @Test func threadsOfABatchShareOneRead() async {
        let once = S3ConfigurationOnce(given: nil, load: { () throws(DownloadError) in Self.configuration })
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<16 { group.addTask { _ = try? once.configuration() } }
        }
        #expect(once.reads == 1)
    }
}
