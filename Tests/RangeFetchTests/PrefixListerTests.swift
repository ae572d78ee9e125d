import Foundation
import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A prefix's objects become batch entries a page at a time (``PrefixLister``), from a fake page
/// source: memory is one page whatever the prefix's size, a failing page stops the listing where
/// it is, and the batch's feed checks objects' paths like any entry's.
struct PrefixListerTests {
    /// Keys `p/k00000.bin` … in pages of `pageSize`, made as asked for; page `failing` (from 1)
    /// throws an HTTP error, and `repeatsToken` makes every page name the same next token.
    final class FakePages: ListingPageSource, Sendable {
        let count: Int
        let pageSize: Int
        let failing: Int?
        let repeatsToken: Bool
        let keys: @Sendable (Int) -> String
        private let requestCount = Atomic(0)
        /// Pages asked for so far.
        var requests: Int { requestCount.load(ordering: .relaxed) }

        init(count: Int, pageSize: Int, failing: Int? = nil, repeatsToken: Bool = false,
             keys: @escaping @Sendable (Int) -> String = { "p/k\(String(format: "%05d", $0)).bin" }) {
            self.count = count
            self.pageSize = pageSize
            self.failing = failing
            self.repeatsToken = repeatsToken
            self.keys = keys
        }

        func page(after token: String?) throws(DownloadError) -> ListingPage {
            requestCount.add(1, ordering: .relaxed)
            let first = token.flatMap { Int($0.dropFirst()) } ?? 0
            if repeatsToken, token != nil { return ListingPage(objects: [], nextToken: token) }
            if first / pageSize + 1 == failing {
                throw S3Client.error(status: 500, body: Array("<Error><Code>InternalError</Code><Message>try again</Message></Error>".utf8),
                                     listing: "s3://b/p/")
            }
            let last = min(count, first + pageSize)
            let objects = (first..<last).map { S3Client.Object(key: keys($0), size: 10, etag: String(repeating: "a", count: 32)) }
            return ListingPage(objects: objects, nextToken: last < count ? "t\(last)" : nil)
        }
    }

    static let mapping = PrefixEntryMapping(prefix: S3Location(bucket: "b", key: "p/"), prefixURL: "s3://b/p/")

    @Test func aPageIsAskedForOnlyOnceTheOneBeforeIsUsedUp() throws {
        let pages = FakePages(count: 1050, pageSize: 100)
        let lister = PrefixLister(source: pages, mapping: Self.mapping)
        var taken: [String] = []
        while let entry = try lister.next() {
            taken.append(entry.url)
            #expect(lister.pagesFetched == (taken.count - 1) / 100 + 1, "after \(taken.count) entries")
        }
        #expect(taken == (0..<1050).map { "s3://b/p/k\(String(format: "%05d", $0)).bin" })
        #expect(lister.pagesFetched == 11 && pages.requests == 11)
        #expect(lister.mostObjectsHeld == 100)
        #expect(try lister.next() == nil && pages.requests == 11, "asked again after the last page")
    }

    /// 100,000 objects in S3's pages of 1,000: never more than one page held.
    @Test func aHundredThousandObjectsAreListedHoldingOnePage() throws {
        let pages = FakePages(count: 100_000, pageSize: 1000)
        let lister = PrefixLister(source: pages, mapping: Self.mapping)
        var count = 0
        while try lister.next() != nil { count += 1 }
        #expect(count == 100_000)
        #expect(lister.pagesFetched == 100)
        #expect(lister.mostObjectsHeld == 1000)
    }

    @Test func aFailingPageStopsTheListingAfterThePagesBefore() throws {
        let lister = PrefixLister(source: FakePages(count: 500, pageSize: 100, failing: 3), mapping: Self.mapping)
        for _ in 0..<200 { #expect(try lister.next() != nil) }
        let error = #expect(throws: DownloadError.self) { try lister.next() }
        #expect(error?.code == .httpStatus(500))
        #expect(error?.message == "listing s3://b/p/: HTTP 500: S3 said InternalError (try again)", "\(String(describing: error))")
    }

    @Test func aRepeatedContinuationTokenStopsTheListing() throws {
        let lister = PrefixLister(source: FakePages(count: 500, pageSize: 100, repeatsToken: true), mapping: Self.mapping)
        for _ in 0..<100 { #expect(try lister.next() != nil) }
        let error = #expect(throws: DownloadError.self) { try lister.next() }
        #expect(error?.message.contains("same continuation token twice") == true, "\(String(describing: error))")
    }

    static let md5 = String(repeating: "ab", count: 16)

    /// Key (and ETag) to the entry's output path and MD5, or no entry.
    @Test(arguments: [
        ("p/a.bin", md5, "a.bin", md5),
        ("p/sub/deep/a.bin", md5.uppercased(), "sub/deep/a.bin", md5),
        ("p/big.bin", "0123456789abcdef0123456789abcdef-3", "big.bin", nil),
        ("p/none.bin", nil, "none.bin", nil),
        ("p/x/../y.bin", nil, "x/y.bin", nil),
        ("p/./here.bin", nil, "here.bin", nil),
        ("p/sub/", nil, nil, nil),
        ("p/", nil, nil, nil),
        ("p/..", nil, nil, nil),
    ] as [(String, String?, String?, String?)])
    func objectsMapToEntriesAsS3EntriesMadeThem(key: String, etag: String?, output: String?, md5: String?) {
        let entry = Self.mapping.entry(for: S3Client.Object(key: key, size: 1, etag: etag))
        #expect(entry?.output == output)
        guard let entry else { return }
        #expect(entry.url == "s3://b/\(key)")
        #expect(entry.origin == "s3://b/p/")
        #expect(entry.checksums == (md5.flatMap { DigestValue(algorithm: .md5, hex: $0) }.map { [$0] } ?? []))
    }

    @Test func aControlCharacterInAKeyIsNotInTheLocalName() throws {
        let entry = try #require(Self.mapping.entry(for: S3Client.Object(key: "p/bell\u{7}.bin", size: 1, etag: nil)))
        #expect(entry.url == "s3://b/p/bell\u{7}.bin")
        #expect(entry.output?.unicodeScalars.contains { $0.value < 0x20 } == false, "\(String(describing: entry.output))")
    }
}

/// ``BatchFeed`` with a prefix: given entries, then the objects page by page, then the list; a
/// listing failure stops the feed like a malformed line; objects' paths are checked exactly.
@Suite(.serialized)
final class PrefixFeedTests {
    let out: TemporaryDirectory

    init() throws { out = try TemporaryDirectory("rf-prefix-feed") }

    private func drain(_ feed: BatchFeed) -> [BatchEntry] {
        var entries: [BatchEntry] = []
        while let next = feed.next() { entries.append(next.entry) }
        return entries
    }

    @Test func givenEntriesThenObjectsThenTheListInOrder() throws {
        let list = out.file("list.txt")
        try "http://127.0.0.1:1/l1.bin\nhttp://127.0.0.1:1/l2.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let pages = PrefixListerTests.FakePages(count: 250, pageSize: 100)
        let feed = try BatchFeed(BatchInput(entries: [BatchEntry(url: "http://127.0.0.1:1/g.bin")], listPath: list),
                                 listers: [PrefixLister(source: pages, mapping: PrefixListerTests.mapping)], defaultDirectory: out.path)
        #expect(feed.streams)
        let first = try #require(feed.next())
        #expect(first.entry.url == "http://127.0.0.1:1/g.bin" && pages.requests == 0, "listed before an object was needed")
        #expect(feed.next()?.entry.url == "s3://b/p/k00000.bin" && pages.requests == 1)
        let rest = drain(feed)
        #expect(feed.failure == nil && feed.isExhausted)
        #expect(rest.count == 249 + 2)
        #expect(rest.suffix(2).map(\.url) == ["http://127.0.0.1:1/l1.bin", "http://127.0.0.1:1/l2.bin"])
        #expect(pages.requests == 3)
    }

    @Test func aListingFailureStopsTheFeedAfterTheObjectsBeforeIt() throws {
        let lister = PrefixLister(source: PrefixListerTests.FakePages(count: 500, pageSize: 100, failing: 3),
                                  mapping: PrefixListerTests.mapping)
        let feed = try BatchFeed(BatchInput(), listers: [lister], defaultDirectory: out.path)
        #expect(drain(feed).count == 200)
        #expect(feed.failure?.message == "listing s3://b/p/: HTTP 500: S3 said InternalError (try again)", "\(String(describing: feed.failure))")
        #expect(feed.next() == nil, "handed out more after the failure")
    }

    /// Keys `p/a/../x.bin` and `p/a/x.bin` are both saved as `a/x.bin`: the second is refused,
    /// naming the first, found by listing the prefix again.
    @Test func twoObjectsSavedAtOnePathAreRefusedNamingBoth() throws {
        let keys = ["p/k0.bin", "p/a/../x.bin", "p/k2.bin", "p/a/x.bin", "p/k4.bin"]
        let pages = PrefixListerTests.FakePages(count: keys.count, pageSize: 2, keys: { keys[$0] })
        let feed = try BatchFeed(BatchInput(), listers: [PrefixLister(source: pages, mapping: PrefixListerTests.mapping)],
                                 defaultDirectory: out.path)
        #expect(drain(feed).map(\.url) == ["s3://b/p/k0.bin", "s3://b/p/a/../x.bin", "s3://b/p/k2.bin"])
        let message = feed.failure?.message ?? ""
        #expect(message.contains("s3://b/p/ (s3://b/p/a/x.bin) and s3://b/p/ (s3://b/p/a/../x.bin) would both be saved as \(out.path)/a/x.bin"),
                "\(message)")
        #expect(pages.requests == 2 + 1, "the earlier page was not listed again")
    }

    @Test func aListLineSavedWhereAnObjectIsIsRefused() throws {
        let list = out.file("dup.txt")
        try "http://127.0.0.1:1/other.bin\n  out=k00001.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let feed = try BatchFeed(BatchInput(listPath: list),
                                 listers: [PrefixLister(source: PrefixListerTests.FakePages(count: 3, pageSize: 2),
                                                        mapping: PrefixListerTests.mapping)],
                                 defaultDirectory: out.path)
        #expect(drain(feed).count == 3)
        #expect(feed.failure?.message.contains("dup.txt:1 (http://127.0.0.1:1/other.bin) and s3://b/p/ (s3://b/p/k00001.bin) would both be saved") == true,
                "\(String(describing: feed.failure))")
    }

    @Test func aPrefixThatNamesAnObjectIsRefusedBeforeAnyRequest() throws {
        var options = DownloadOptions()
        options.s3 = S3Configuration(signer: nil, region: "us-east-1", endpoint: "http://127.0.0.1:1")
        let error = #expect(throws: DownloadError.self) {
            _ = try BatchFeed(BatchInput(prefixes: ["s3://b/key.bin"]), defaultDirectory: self.out.path, options: options)
        }
        #expect(error?.code == .invalidURL && error?.message == "s3://b/key.bin: not an s3://BUCKET/PREFIX/ URL", "\(String(describing: error))")
    }

    @Test func anObjectSavedWhereAGivenEntryIsIsRefused() throws {
        let given = BatchEntry(url: "http://127.0.0.1:1/k00000.bin")
        let feed = try BatchFeed(BatchInput(entries: [given]),
                                 listers: [PrefixLister(source: PrefixListerTests.FakePages(count: 3, pageSize: 2),
                                                        mapping: PrefixListerTests.mapping)],
                                 defaultDirectory: out.path)
        #expect(drain(feed).count == 1)
        #expect(feed.failure?.message.contains("would both be saved as \(out.path)/k00000.bin") == true, "\(String(describing: feed.failure))")
    }
}
