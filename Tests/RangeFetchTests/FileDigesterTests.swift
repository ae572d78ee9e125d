import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Our file digests against coreutils at the edges of the 1 MiB read buffer.
struct FileDigesterTests {
    static let sizes: [Int64] = [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, (2 << 20) - 1, (2 << 20) + 1, 3 << 20]

    @Test(arguments: sizes)
    func digestsMatchCoreutilsAroundBufferBoundaries(size: Int64) throws {
        let directory = try TemporaryDirectory("rf-digest")
        let path = try directory.randomFile("f.bin", size: size)
        let digests = try FileDigester.digests(ofFileAt: path, algorithms: [.sha256, .md5])
        #expect(digests[0].hex == (try Checksums.sha256sum(path)))
        #expect(digests[1].hex == (try Checksums.md5sum(path)))
    }

    @Test func prefixHasherFollowsAGrowingPrefixAndFinishesTheRest() throws {
        let directory = try TemporaryDirectory("rf-digest")
        let path = try directory.randomFile("g.bin", size: (5 << 20) + 123)
        let file = try PartialFile(path: path, readOnly: true)
        let hasher = PrefixHasher(file: file, algorithms: [.sha256])
        for end in [Int64(1000), 1 << 20, 3 << 20, 2 << 20] { hasher.advance(to: end) }
        let digests = try hasher.finish(size: (5 << 20) + 123)
        #expect(digests.first?.hex == (try Checksums.sha256sum(path)))
    }

    @Test func missingFileIsAFileSystemError() {
        #expect(throws: DownloadError.self) { try FileDigester.digests(ofFileAt: "/nonexistent/x", algorithms: [.md5]) }
    }
}
