import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Which mirrors are checked at once and when a backup takes a dropped mirror's place: tables, no
/// sockets.
struct MirrorCandidatesTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var given: [String]
        var duplicates: [String] = []
        var backups: [String] = []
        var first: [String]
        var kept: [String]
        var testDescription: String { "\(given) + \(duplicates) | \(backups)" }
    }

    /// Given mirrors first, then duplicates; the main URL and repeats never; backups held back
    /// unless already among the first.
    @Test(arguments: [
        Case(given: [], first: [], kept: []),
        Case(given: ["a", "b"], first: ["a", "b"], kept: []),
        Case(given: ["a"], duplicates: ["b", "a", "main"], first: ["a", "b"], kept: []),
        Case(given: ["main", "a"], backups: ["x", "a", "y", "x"], first: ["a"], kept: ["x", "y"]),
        Case(given: [], duplicates: ["d"], backups: ["main", "d", "z"], first: ["d"], kept: ["z"]),
    ])
    func candidatesAreOrderedWithoutRepeats(_ row: Case) {
        let candidates = MirrorCandidates(main: "main", given: row.given, duplicates: row.duplicates, backups: row.backups)
        #expect(candidates.first == row.first)
        #expect(candidates.backups == row.kept)
        #expect(candidates.isEmpty == (row.first.isEmpty && row.kept.isEmpty))
    }

    /// One backup per dropped agreed mirror, in order; nothing for a URL that never agreed (a
    /// mirror left out at its check costs no backup), nothing twice for one drop, nothing once
    /// the backups are spent: requests stay bounded.
    @Test func aBackupReplacesOnlyADroppedAgreedMirror() {
        var candidates = MirrorCandidates(main: "main", given: ["a", "b", "c"], backups: ["x", "y"])
        #expect(candidates.replace(dropped: "a") == nil, "a never agreed")
        candidates.noteAgreed("a")
        candidates.noteAgreed("b")
        #expect(candidates.replace(dropped: "a") == "x")
        #expect(candidates.replace(dropped: "a") == nil, "a was replaced already")
        #expect(candidates.replace(dropped: "main") == nil)
        candidates.noteAgreed("x")
        #expect(candidates.replace(dropped: "x") == "y", "a backup that agreed and dropped is replaced too")
        #expect(candidates.replace(dropped: "b") == nil, "no backup left")
        #expect(candidates.backups.isEmpty)
    }
}

/// The hand-over between the mirror checks and the engines: mirrors in order, less the
/// distrusted; drops wake the checks; warnings taken once.
struct MirrorFeedTests {
    static func remote(_ url: String) -> RemoteFile {
        RemoteFile(url: url, size: 10, acceptsRanges: true, etag: nil, lastModified: nil, suggestedName: "f",
                   advertisedDigests: [])
    }

    @Test func enginesTakeEachAgreedMirrorOnceLessTheDistrusted() {
        let feed = MirrorFeed()
        feed.agreed(Self.remote("a"))
        var (fresh, seen) = feed.mirrors(after: 0)
        #expect(fresh.map(\.url) == ["a"] && seen == 1)
        feed.agreed(Self.remote("b"))
        feed.agreed(Self.remote("c"))
        feed.distrust("b")
        (fresh, seen) = feed.mirrors(after: seen)
        #expect(fresh.map(\.url) == ["c"] && seen == 3)
        #expect(feed.mirrors(after: seen).fresh.isEmpty)
        // A refetch round's engine starts with every mirror agreed so far.
        #expect(feed.mirrors(after: 0).fresh.map(\.url) == ["a", "c"])
    }

    @Test func dropsWakeTheChecksAndWarningsAreTakenOnce() {
        let feed = MirrorFeed()
        let woken = Locked(0)
        feed.onDrop { woken.withLock { $0 += 1 } }
        feed.dropped("a")
        feed.dropped("b")
        #expect(woken.current == 2)
        #expect(feed.takeDropped() == ["a", "b"])
        #expect(feed.takeDropped().isEmpty)
        feed.warn(.mirrorsSpotCheckedOnly)
        #expect(feed.takeWarnings() == [.mirrorsSpotCheckedOnly])
        #expect(feed.takeWarnings().isEmpty)
    }
}
