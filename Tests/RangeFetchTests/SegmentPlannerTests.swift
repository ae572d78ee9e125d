import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

struct SegmentPlannerTests {
    let planner = SegmentPlanner(connections: 8, minimumSegmentBytes: 1024)

    @Test func emptyFileHasNoRanges() {
        #expect(planner.plan(size: 0).isEmpty)
    }

    @Test func oneByteFileIsOneRange() {
        #expect(planner.plan(size: 1) == [ByteRange(0, 1)])
    }

    static let edges: [(Int64, Int)] = [(8 * 1024 - 1, 7), (8 * 1024, 8), (8 * 1024 + 1, 8), (1023, 1), (2047, 1), (2048, 2)]

    @Test(arguments: edges)
    func rangeCountFollowsMinimumSegmentAtTheEdges(size: Int64, count: Int) {
        let ranges = planner.plan(size: size)
        #expect(ranges.count == count)
        #expect(ranges.map(\.count).reduce(0, +) == size)
    }

    @Test func filesOverFourGigabytesUseSixtyFourBitOffsets() {
        let size: Int64 = 5 << 40 + 3
        let ranges = SegmentPlanner(connections: 16, minimumSegmentBytes: 1 << 20).plan(size: size)
        #expect(ranges.count == 1024)
        #expect(ranges.last?.upper == size)
        #expect(ranges.allSatisfy { $0.count >= size / 1024 })
        #expect(ranges[1023].httpRangeSpec == "\(ranges[1023].lower)-\(size - 1)")
    }

    @Test func plansCoverTheFileExactlyWithNoRangeBelowTheMinimum() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let size = Int64.random(in: 0...(1 << 34), using: &generator) >> Int64.random(in: 0...33, using: &generator)
            let connections = Int.random(in: 1...64, using: &generator)
            let minimum = Int64.random(in: 1...(1 << 22), using: &generator)
            let planner = SegmentPlanner(connections: connections, minimumSegmentBytes: minimum,
                                         pieceBytes: Int64.random(in: 1...(1 << 24), using: &generator))
            let ranges = planner.plan(size: size)
            var end: Int64 = 0
            for range in ranges {
                #expect(range.lower == end, "gap or overlap at \(end) for size \(size)")
                #expect(!range.isEmpty)
                if ranges.count > 1 { #expect(range.count >= minimum) }
                end = range.upper
            }
            #expect(end == size)
            #expect(ranges.count <= planner.maximumRanges)
            if size > 0 { #expect(ranges.count >= Int(min(Int64(connections), max(1, size / minimum)))) }
        }
    }

    @Test func largeFilesAreCutIntoPiecesTakenInOrder() {
        let ranges = SegmentPlanner(connections: 16, minimumSegmentBytes: 1 << 20).plan(size: 1 << 30)
        #expect(ranges.count == 256)
        #expect(ranges.allSatisfy { $0.count == 4 << 20 })
        let few = SegmentPlanner(connections: 16, minimumSegmentBytes: 1 << 20).plan(size: 32 << 20)
        #expect(few.count == 16)
    }

    @Test func stealingSplitsOnlyRangesWorthSplitting() {
        #expect(planner.stealPoint(remaining: ByteRange(0, 2047)) == nil)
        #expect(planner.stealPoint(remaining: ByteRange(100, 2148)) == 1124)
    }

    @Test func contiguousPrefixStopsAtTheFirstIncompleteSegment() {
        let segments = [
            SegmentState(range: ByteRange(0, 10), written: 10),
            SegmentState(range: ByteRange(20, 30), written: 10),
            SegmentState(range: ByteRange(10, 20), written: 4),
        ]
        #expect(segments.contiguousPrefix == 14)
        #expect(segments.coversExactly(size: 30))
        #expect(!segments.coversExactly(size: 31))
    }
}

struct ByteRangeTests {
    @Test func httpFormIsInclusive() {
        #expect(ByteRange(0, 10).httpRangeSpec == "0-9")
        #expect(ByteRange(5, 6).httpRangeSpec == "5-5")
        #expect(ByteRange(0, 10).suffix(from: 4) == ByteRange(4, 10))
        #expect(ByteRange(0, 10).suffix(from: 40) == ByteRange(10, 10))
    }
}
