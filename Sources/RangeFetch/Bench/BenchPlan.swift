import RangeFetchBase
import RangeFetchNetwork

/// What `rangefetch bench` measures: which connection counts, for how long, how often, and
/// where the bytes go. A pure value; `BenchMeasurer` carries it out.
package struct BenchPlan: Sendable, Equatable {
    /// Where received bytes go.
    public enum Sink: String, Sendable, CaseIterable {
        /// Discarded as they arrive: measures the network and the server.
        case null
        /// Written with `pwrite` into a temporary sparse file that is removed afterwards:
        /// measures the network and the disk together.
        case disk
    }

    /// The sweep, in order (each 1 to 64, ascending, distinct). Up to 64, `-n auto`'s ceiling:
    /// behind a per-connection cap of a few MiB/s the knee lies past 16 (the sweep stops once
    /// a step no longer grows, so an uncapped link never gets that far).
    public var connectionCounts: [Int] = [1, 2, 4, 8, 16, 32, 64]
    /// Seconds each run of a step may last at most.
    public var durationSeconds: Double = 5
    /// Bytes each run of a step may fetch at most; `nil`: the whole file. Never more than the file.
    public var maximumBytes: Int64?
    /// Runs per step; a step reports their median and spread.
    public var runs: Int = 3
    /// Where the measured bytes go.
    public var sink: Sink = .null
    /// Where `--sink disk` puts its temporary file.
    public var diskDirectory: String = "."
    /// Stop the sweep once a step is no more than ``growthThreshold`` faster than the best so far.
    public var stopWhenFlat = true
    /// Transport failures retried per connection and run before the run fails.
    public var maximumRetries = 3
    /// Headers, credentials, TLS and proxy settings of every request.
    public var request = RequestOptions()

    /// A step must be this much faster than every earlier one (1.05: 5 %) to count as growth;
    /// also the knee's tolerance (the smallest count within 5 % of the best).
    public static let growthThreshold = 1.05

    /// The defaults: the usual connection steps, into the null sink.
    public init() {}

    /// Bytes one run of a step may fetch: the smaller of ``maximumBytes`` and the file.
    /// `nil` when the size is unknown and no limit was given (then only the duration stops it).
    public func budgetBytes(fileSize: Int64?) -> Int64? {
        switch (fileSize, maximumBytes) {
        case let (size?, limit?): min(size, limit)
        case let (size?, nil): size
        case let (nil, limit): limit
        }
    }

    /// Distinct ranges of `0..<budget`, one per connection, covering it exactly; connections
    /// beyond the budget's byte count get none (so a 3-byte file measures at most 3 ranges).
    public static func slices(budget: Int64, connections: Int) -> [ByteRange] {
        guard budget > 0, connections > 0 else { return [] }
        let count = Int64(min(Int64(connections), budget))
        return (0..<count).map { index in
            ByteRange(budget * index / count, budget * (index + 1) / count)
        }
    }

    /// Whether the sweep goes on after steps with these median throughputs (bytes/s, in order):
    /// it stops once the latest is not ``growthThreshold`` above the best of those before it.
    public func shouldContinue(afterMedians medians: [Double]) -> Bool {
        guard stopWhenFlat, medians.count >= 2, let latest = medians.last else { return true }
        let bestBefore = medians.dropLast().max() ?? 0
        return latest > bestBefore * Self.growthThreshold
    }

    /// Why the plan cannot be carried out, or `nil` (messages name the situation, not flags).
    public func problem() -> String? {
        if connectionCounts.isEmpty { return "no connection counts to measure" }
        if connectionCounts.contains(where: { !(1...64).contains($0) }) { return "connection counts must be between 1 and 64" }
        if connectionCounts != connectionCounts.sorted() || Set(connectionCounts).count != connectionCounts.count {
            return "connection counts must be distinct and ascending"
        }
        if !(durationSeconds > 0 && durationSeconds <= 3600) { return "the duration must be between 0 and 3600 seconds" }
        if let maximumBytes, maximumBytes < 1 { return "the byte limit must be at least 1 byte" }
        if !(1...100).contains(runs) { return "runs must be between 1 and 100" }
        return nil
    }
}
