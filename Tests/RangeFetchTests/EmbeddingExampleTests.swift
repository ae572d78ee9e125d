import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `Examples/Embedding`, the library used as an application would, built as its own package
/// (depending on this one by path) and run against the test nginx.
@Suite(.serialized)
final class EmbeddingExampleTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    @Test func theExamplePackageBuildsAndRunsEachStep() throws {
        let big = try www.randomFile("big.bin", size: 24 << 20)
        let a = try www.randomFile("a.bin", size: 3 << 20)
        let b = try www.randomFile("b.bin", size: 200_000)
        let repository = SchemaValidation.repository
        let scratch = repository + "/.build-example"
        func buildExample() throws -> TestProcess.Result {
            try TestProcess.run("/usr/bin/env", ["swift", "build", "--package-path", repository + "/Examples/Embedding",
                                                 "--scratch-path", scratch], timeoutSeconds: 900)
        }
        var build = try buildExample()
        if build.status != 0 {
            // A scratch folder built before a source file of this package was added or moved
            // keeps a stale list of its sources (SwiftPM then misses the new file): start afresh.
            try? FileManager.default.removeItem(atPath: scratch)
            build = try buildExample()
        }
        #expect(build.status == 0, "\(build.stdout.suffix(2000)) \(build.stderr.suffix(2000))")
        guard build.status == 0 else { return }
        let result = try TestProcess.run(repository + "/.build-example/debug/Embedding", [nginx.baseURL + "/slow", out.path])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let output = result.stdout
        #expect(output.contains("1. saved \(out.path)/a.bin: \(3 << 20) bytes"), "\(output)")
        #expect(output.contains("2. cancelled: interrupted"), "\(output)")
        #expect(output.contains("3. batch: 2 downloaded, 0 failed"), "\(output)")
        #expect(output.contains("4. ") && output.contains("404"), "\(output)")
        let resumed = output.split(separator: "\n").first { $0.hasPrefix("2. resumed big.bin: ") } ?? ""
        #expect(!resumed.hasPrefix("2. resumed big.bin: 0 bytes"), "\(output)")
        #expect(try Checksums.sha256sum(out.file("big.bin")) == Checksums.sha256sum(big))
        #expect(try Checksums.sha256sum(out.file("a.bin")) == Checksums.sha256sum(a))
        #expect(try Checksums.sha256sum(out.file("batch/b.bin")) == Checksums.sha256sum(b))
    }
}
