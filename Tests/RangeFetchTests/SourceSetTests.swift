import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Choosing among a file's sources (main URL and mirrors), dropping failing or slow ones, and what
/// each mirror delivered: tables, no sockets.
struct SourceSetTests {
    static let main = "https://main.example/file.bin"
    static let mirrorA = "https://a.example:8443/file.bin"
    static let mirrorB = "http://b.example/file.bin?sig=secret"

    static func remote(_ url: String) -> RemoteFile {
        RemoteFile(url: url, size: 1 << 20, acceptsRanges: true, etag: "\"e\"", lastModified: nil,
                   suggestedName: "file.bin", advertisedDigests: [])
    }

    /// A main URL and `mirrors` mirrors (up to two).
    static func set(mirrors: Int = 2) -> SourceSet {
        SourceSet(remote: remote(main), mirrors: [mirrorA, mirrorB].prefix(mirrors).map(remote))
    }

    static let (m, a, b) = (SourceID.main, SourceID(index: 1), SourceID(index: 2))

    /// How one source stands for a picking case: its finished record and its running requests.
    struct Standing: Sendable {
        var bytesPerSecond: Int64?
        var active = 0
        var dropped = false
    }

    /// Books `standing` against `id`: a finished request of one second at its rate, then its
    /// running requests.
    static func apply(_ standing: Standing, to id: SourceID, in set: inout SourceSet) {
        if let rate = standing.bytesPerSecond {
            set.started(id)
            set.ended(id, bytes: rate, firstByteAt: 10, now: 11)
        }
        for _ in 0..<standing.active { set.started(id) }
        if standing.dropped { _ = set.exclude(id, why: "test") }
    }

    @Test(arguments: [
        // Nothing measured: the main URL, then the others in order (ties to the least busy).
        ("all unmeasured, all idle", [Standing(), Standing(), Standing()], 16, 0),
        ("all unmeasured, main busy", [Standing(active: 1), Standing(), Standing()], 16, 1),
        // A source not measured yet goes before any measured one, however fast.
        ("unmeasured first", [Standing(bytesPerSecond: 9_000_000), Standing(bytesPerSecond: 5_000_000), Standing(active: 3)], 16, 2),
        // Else the fastest per connection, even when busier.
        ("fastest", [Standing(bytesPerSecond: 1_000_000), Standing(bytesPerSecond: 3_000_000, active: 4),
                     Standing(bytesPerSecond: 2_000_000)], 16, 1),
        // Within 10% counts as the same speed: the least busy.
        ("tie to least busy", [Standing(bytesPerSecond: 1_000_000, active: 3), Standing(bytesPerSecond: 1_050_000, active: 4),
                               Standing(bytesPerSecond: 1_080_000, active: 2)], 16, 2),
        ("just past a tie", [Standing(bytesPerSecond: 1_000_000), Standing(bytesPerSecond: 1_200_000, active: 5),
                             Standing(bytesPerSecond: 900_000)], 16, 1),
        // The per-source limit: a full source is passed over, all full is nil.
        ("fastest is full", [Standing(bytesPerSecond: 1_000_000, active: 1), Standing(bytesPerSecond: 3_000_000, active: 2),
                             Standing(bytesPerSecond: 2_000_000, active: 1)], 2, 2),
        ("all full", [Standing(active: 2), Standing(active: 2), Standing(active: 2)], 2, nil),
        // A dropped source is never picked.
        ("fastest dropped", [Standing(bytesPerSecond: 1_000_000), Standing(bytesPerSecond: 3_000_000, dropped: true),
                             Standing(bytesPerSecond: 2_000_000)], 16, 2),
        ("unmeasured dropped", [Standing(bytesPerSecond: 1_000_000), Standing(dropped: true), Standing(dropped: true)], 16, 0),
    ] as [(String, [Standing], Int, Int?)])
    func picking(name: String, standings: [Standing], limit: Int, expected: Int?) {
        var set = Self.set()
        for (index, standing) in standings.enumerated() { Self.apply(standing, to: SourceID(index: index), in: &set) }
        #expect(set.pick(maximumPerSource: limit) == expected.map(SourceID.init(index:)), "\(name)")
    }

    /// A range whose bytes failed their Content-Digest goes to another source when one has room,
    /// else back to the same one (a single source retries on itself).
    @Test func aSourceThatLiedAboutARangeIsAvoidedWhileAnotherHasRoom() {
        var set = Self.set(mirrors: 1)
        #expect(set.pick(maximumPerSource: 1, avoiding: Self.m) == Self.a)
        #expect(set.pick(maximumPerSource: 1, avoiding: Self.a) == Self.m)
        set.started(Self.a)
        #expect(set.pick(maximumPerSource: 1, avoiding: Self.m) == Self.m, "the other is full")
        let single = SourceSet(remote: Self.remote(Self.main))
        #expect(single.pick(maximumPerSource: 1, avoiding: Self.m) == Self.m)
    }

    /// A mirror agreed mid-run joins after the others (a new id; ids already given keep their
    /// meaning), is picked next as not measured yet, and a repeat of a URL joins nothing.
    @Test func aMirrorAgreedMidRunJoinsAndIsPickedNext() {
        var set = Self.set(mirrors: 1)
        set.started(Self.m)
        set.ended(Self.m, bytes: 4 << 20, firstByteAt: 10, now: 11)
        set.started(Self.a)
        set.ended(Self.a, bytes: 4 << 20, firstByteAt: 10, now: 11)
        #expect(set.add(mirror: Self.remote(Self.mirrorB)) == Self.b)
        #expect(set.add(mirror: Self.remote(Self.mirrorB)) == nil)
        #expect(set.add(mirror: Self.remote(Self.main)) == nil)
        #expect(set.ids == [Self.m, Self.a, Self.b])
        #expect(set[Self.b].origin == "http://b.example:80")
        #expect(set.pick(maximumPerSource: 4) == Self.b)
    }

    @Test func aSingleSourceIsPickedUntilItIsFull() {
        var set = Self.set(mirrors: 0)
        set.started(Self.m)
        set.ended(Self.m, bytes: 100, firstByteAt: 0, now: 2)
        #expect(set.pick(maximumPerSource: 1) == Self.m)
        set.started(Self.m)
        #expect(set.pick(maximumPerSource: 1) == nil)
        #expect(set.hasMirrors == false)
    }

    @Test func endedBooksActiveBytesAndSecondsFromTheFirstByte() {
        var set = Self.set()
        set.started(Self.a)
        set.started(Self.a)
        set.ended(Self.a, bytes: 3000, firstByteAt: 5, now: 7)
        // A request that never got a byte adds nothing to the record.
        set.ended(Self.a, bytes: 0, firstByteAt: nil, now: 9)
        // An end without a start (a detached request already booked) never goes below zero.
        set.ended(Self.a, bytes: 0, firstByteAt: nil, now: 9)
        #expect(set[Self.a].usage == SourceSet.Usage(active: 0, bytes: 3000, seconds: 2))
        #expect(set[Self.a].usage.rate == 1500)
        set.started(Self.b)
        set.ended(Self.b, bytes: 500, firstByteAt: 5, now: 5.5)
        // Under a second of record is not a rate yet.
        #expect(set[Self.b].usage.rate == nil)
    }

    @Test func twoFailuresInARowDropAMirror() {
        var set = Self.set()
        #expect(set.failed(Self.a, why: "HTTP 500") == nil)
        let drop = set.failed(Self.a, why: "HTTP 502")
        #expect(drop == SourceSet.Drop(id: Self.a, url: Self.mirrorA, reason: "2 requests in a row failed (HTTP 502)"))
        #expect(drop?.warning.message == "mirror https://a.example:8443/file.bin dropped: 2 requests in a row failed (HTTP 502)")
        #expect(set[Self.a].usage.dropped)
        #expect(set.pick(maximumPerSource: 16) != Self.a)
    }

    @Test func aSuccessEndsTheRunOfFailures() {
        var set = Self.set()
        #expect(set.failed(Self.a, why: "x") == nil)
        set.succeeded(Self.a)
        #expect(set.failed(Self.a, why: "x") == nil)
        #expect(set[Self.a].usage.dropped == false)
    }

    @Test func failuresNeverDropTheLastSource() {
        var single = Self.set(mirrors: 0)
        for _ in 0..<5 { #expect(single.failed(Self.m, why: "x") == nil) }
        #expect(single[Self.m].usage.dropped == false)

        var set = Self.set(mirrors: 1)
        let first = set.failed(Self.m, why: "x")
        let second = set.failed(Self.m, why: "x")
        #expect(first == nil)
        #expect(second?.warning.message == "main URL \(Self.main) dropped: 2 requests in a row failed (x)")
        for _ in 0..<3 { #expect(set.failed(Self.a, why: "x") == nil) }
        #expect(set.pick(maximumPerSource: 16) == Self.a)
    }

    @Test func excludingStopsASourceButNeverTheLastOne() {
        var set = Self.set()
        // The URL is redacted for the warning.
        let drop = set.exclude(Self.b, why: "it refused a request (HTTP 403)")
        #expect(drop?.url == "http://b.example/file.bin?sig=REDACTED")
        #expect(drop?.warning.message == "mirror http://b.example/file.bin?sig=REDACTED dropped: it refused a request (HTTP 403)")
        // Already dropped: nothing more to do.
        #expect(set.exclude(Self.b, why: "again") == nil)
        #expect(set.exclude(Self.m, why: "gone")?.id == Self.m)
        #expect(set.exclude(Self.a, why: "last") == nil)
        #expect(set.pick(maximumPerSource: 16) == Self.a)
    }

    @Test func aSlowSourceIsDroppedCountingItsRunningRequest() {
        var set = Self.set(mirrors: 1)
        set.started(Self.m)
        set.ended(Self.m, bytes: 4_000_000, firstByteAt: 0, now: 1)
        set.started(Self.a)
        // A crawling mirror's first request, still running: not judged in its first second…
        let early = set.slowSources(running: [.init(id: Self.a, bytes: 1000, firstByteAt: 9.5)], now: 10)
        #expect(early.isEmpty)
        // …nor before it has a first byte…
        #expect(set.slowSources(running: [.init(id: Self.a, bytes: 0, firstByteAt: nil)], now: 10).isEmpty)
        // …but once a second past it, at under a quarter of the best rate per connection.
        let drops = set.slowSources(running: [.init(id: Self.a, bytes: 200_000, firstByteAt: 8)], now: 10)
        #expect(drops.map(\.id) == [Self.a])
        #expect(drops.first?.reason == "it delivers 97.7 KiB/s per connection against 3.8 MiB/s from the fastest source")
        #expect(set[Self.a].usage.dropped)
        // What is left is not compared with anything.
        #expect(set.slowSources(running: [], now: 20).isEmpty)
    }

    @Test(arguments: [
        // Rate of the mirror against 1,000,000 B/s from the main URL: dropped under 25%.
        (240_000, true), (250_000, false), (900_000, false),
    ])
    func theSlowThresholdIsAQuarterOfTheBest(mirrorBytesPerSecond: Int64, dropped: Bool) {
        var set = Self.set(mirrors: 1)
        set.started(Self.m)
        set.ended(Self.m, bytes: 2_000_000, firstByteAt: 0, now: 2)
        set.started(Self.a)
        set.ended(Self.a, bytes: 2 * mirrorBytesPerSecond, firstByteAt: 0, now: 2)
        #expect(set.slowSources(running: [], now: 3).isEmpty == !dropped)
    }

    @Test func theSlowMainURLIsDroppedButNeverEveryone() {
        var set = Self.set()
        for (id, rate) in [(Self.m, 10_000), (Self.a, 10_000), (Self.b, 1_000_000)] as [(SourceID, Int64)] {
            set.started(id)
            set.ended(id, bytes: rate, firstByteAt: 0, now: 1)
        }
        let drops = set.slowSources(running: [], now: 2)
        #expect(drops.map(\.id) == [Self.m, Self.a])
        #expect(drops.first?.warning.message.hasPrefix("main URL \(Self.main) dropped: it delivers") == true)
        #expect(set.pick(maximumPerSource: 16) == Self.b)
        // A single source is never judged slow.
        var single = Self.set(mirrors: 0)
        single.started(Self.m)
        single.ended(Self.m, bytes: 1, firstByteAt: 0, now: 100)
        #expect(single.slowSources(running: [], now: 200).isEmpty)
    }

    @Test func mirrorsDeliveredExtentsAreRecordedByURL() {
        var set = Self.set()
        set.delivered(Self.m, ByteRange(0, 100))
        set.delivered(Self.a, ByteRange(100, 200))
        set.delivered(Self.a, ByteRange(300, 350))
        set.delivered(Self.b, ByteRange(400, 400))
        set.delivered(Self.b, ByteRange(500, 600))
        #expect(set.mirrorExtents == [
            Self.mirrorA: [ByteRange(100, 200), ByteRange(300, 350)],
            Self.mirrorB: [ByteRange(500, 600)],
        ])
    }

    @Test func pushbackIsCountedPerSource() {
        var set = Self.set()
        set.pushedBack(Self.a)
        set.pushedBack(Self.a)
        set.pushedBack(Self.b)
        #expect(set.ids.map { set[$0].usage.pushbacks } == [0, 2, 1])
    }

    @Test func eachSourceKnowsItsOriginAndRequestURL() {
        let set = Self.set()
        #expect(set.ids.map { set[$0].origin } == [
            "https://main.example:443", "https://a.example:8443", "http://b.example:80",
        ])
        #expect(set[source: Self.b].requestURL == Self.mirrorB)
        #expect(set[Self.a].remote.url == Self.mirrorA)
    }
}
