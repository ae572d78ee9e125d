import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A batch's outcomes counted as files end: every file counted, a result kept only while the
/// batch is small or when the file did not end complete.
struct BatchTallyTests {
    struct Case: CustomTestStringConvertible, Sendable {
        /// The statuses of files 0, 1, 2, … in the order they end.
        var ended: [BatchFileResult.Status]
        var keptLimit: Int
        /// Indexes of the results kept.
        var kept: [Int]
        var testDescription: String { "\(ended.map(\.rawValue)) limit \(keptLimit)" }
    }

    static let cases: [Case] = [
        // A small batch keeps every result.
        Case(ended: [.downloaded, .failed, .alreadyComplete], keptLimit: 3, kept: [0, 1, 2]),
        // Past the limit, complete files' results go; the failed one stays.
        Case(ended: [.downloaded, .failed, .alreadyComplete, .downloaded], keptLimit: 3, kept: [1]),
        // Failures past the limit: the first by list order are kept.
        Case(ended: [.failed, .failed, .interrupted, .failed, .notStarted], keptLimit: 2, kept: [0, 1]),
        // Complete files after the limit was passed are not kept.
        Case(ended: [.downloaded, .downloaded, .downloaded, .failed, .downloaded], keptLimit: 2, kept: [3]),
    ]

    @Test(arguments: cases)
    func everyFileIsCountedAndFewResultsKept(_ row: Case) {
        var tally = BatchTally(keptLimit: row.keptLimit)
        for (index, status) in row.ended.enumerated() {
            var result = BatchFileResult(index: index, url: "http://127.0.0.1/\(index)", status: status)
            result.transferredBytes = 10
            tally.add(result)
        }
        let summary = tally.summary(running: [], elapsedSeconds: 1)
        #expect(summary.files.map(\.index) == row.kept)
        #expect(summary.fileCount == row.ended.count)
        #expect(summary.omittedFiles == row.ended.count - row.kept.count)
        #expect(summary.transferredBytes == Int64(10 * row.ended.count))
        for status in [BatchFileResult.Status.downloaded, .alreadyComplete, .failed, .interrupted, .notStarted] {
            #expect(summary.count(status) == row.ended.filter { $0 == status }.count)
        }
        #expect(summary.succeeded == row.ended.allSatisfy { $0 == .downloaded || $0 == .alreadyComplete })
    }

    /// Files still under way are in the summary as they stand, and count.
    @Test func runningFilesAreCounted() {
        var tally = BatchTally(keptLimit: 10)
        tally.add(BatchFileResult(index: 0, url: "u0", status: .downloaded))
        let summary = tally.summary(running: [BatchFileResult(index: 1, url: "u1", status: .notStarted)], elapsedSeconds: 1)
        #expect(summary.fileCount == 2 && summary.count(.notStarted) == 1 && !summary.succeeded)
        #expect(summary.files.map(\.index) == [0, 1])
    }

    /// A million complete files hold at most the limit's results.
    @Test func aMillionFilesKeepNoResultEach() {
        var tally = BatchTally(keptLimit: 100)
        for index in 0..<1_000_000 { tally.add(BatchFileResult(index: index, url: "u", status: .alreadyComplete)) }
        let summary = tally.summary(running: [], elapsedSeconds: 1)
        #expect(summary.files.isEmpty && summary.fileCount == 1_000_000 && summary.succeeded)
        #expect(BatchRenderer.table(summary).contains("1000000 complete files not listed"))
    }
}
