import RangeFetchBase
import RangeFetchNetwork

/// A batch's outcomes, counted as files end, in memory that does not grow with a list of
/// millions: every file is counted (per status, bytes moved), but a file's own result is kept
/// only while the batch is small, or when the file did not end complete (a failure to read, a
/// partial file to resume), and then at most ``keptLimit`` of them.
///
/// | files ended                     | kept results                                        |
/// |---------------------------------|-----------------------------------------------------|
/// | up to `keptLimit`               | every one                                           |
/// | more                            | those that did not end complete, up to `keptLimit`  |
/// | more, and more than `keptLimit` failed | the first `keptLimit` by list order of those |
struct BatchTally: Sendable {
    /// The most results kept.
    let keptLimit: Int
    private(set) var counts: [BatchFileResult.Status: Int] = [:]
    private(set) var transferredBytes: Int64 = 0
    private(set) var ended = 0
    /// Results kept, by index (complete ones too until `keptLimit` files ended).
    private var kept: [Int: BatchFileResult] = [:]
    /// Whether complete files' results are still kept.
    private var keepsComplete = true

    init(keptLimit: Int = BatchSummary.keptResults) {
        precondition(keptLimit > 0, "a tally keeps at least one result")
        self.keptLimit = keptLimit
    }

    /// Counts a file that ended.
    mutating func add(_ result: BatchFileResult) {
        counts[result.status, default: 0] += 1
        transferredBytes += result.transferredBytes
        ended += 1
        if keepsComplete && ended > keptLimit {
            keepsComplete = false
            kept = kept.filter { !$0.value.isComplete }
        }
        guard keepsComplete || !result.isComplete else { return }
        kept[result.index] = result
        // Past the limit, the latest in list order goes.
        if kept.count > keptLimit, let last = kept.keys.max() { kept[last] = nil }
    }

    /// Results not kept.
    var omitted: Int { ended - kept.count }

    /// The summary so far, with `running` (files not ended yet) added as they stand.
    func summary(running: [BatchFileResult], elapsedSeconds: Double) -> BatchSummary {
        var tally = self
        for result in running { tally.add(result) }
        let files = tally.kept.values.sorted { $0.index < $1.index }
        return BatchSummary(files: files, counts: tally.counts, fileCount: tally.ended,
                            transferredBytes: tally.transferredBytes, elapsedSeconds: elapsedSeconds)
    }
}

extension BatchFileResult {
    /// The file is complete at its path.
    var isComplete: Bool { status == .downloaded || status == .alreadyComplete }
}
