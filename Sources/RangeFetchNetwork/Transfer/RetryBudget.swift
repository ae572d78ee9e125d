import RangeFetchBase

/// How failures count against a download's retries: per segment (its failed tries since it last
/// received a byte) and for the whole download (failures while no byte arrived anywhere).
///
/// A pure value: the engine charges each failure and carries out the decision.
package struct RetryBudget {
    /// How a failure counts.
    package enum Blame: Equatable {
        /// A failed try of the segment.
        case segment
        /// The server refused a connection: while other connections still deliver bytes, that
        /// asks for fewer connections, not another try of this range.
        case pushback
        /// Not the segment's fault (an expired signed URL resolved afresh, a source dropped):
        /// counts nothing.
        case none
    }

    package enum Decision: Equatable {
        /// Try again; `tries` is the try number for the delay (1-based).
        case retry(tries: Int)
        /// The budget is spent after `tries` tries.
        case giveUp(tries: Int)
    }

    /// Tries of one segment without progress before the download fails.
    package let maximumTries: Int
    /// The most connections at once: that many failing together still leaves room for a retry.
    package let maximumConnections: Int
    /// Failures counted since any byte of the download last arrived.
    package private(set) var failuresWithoutProgress = 0
    /// Bytes received when the last failure was charged; -1 before the first.
    private var receivedAtLastFailure: Int64 = -1

    package init(maximumTries: Int, maximumConnections: Int) {
        self.maximumTries = maximumTries
        self.maximumConnections = maximumConnections
    }

    /// The least a failed try must bring to count as progress (its segment's tries start
    /// afresh): 64 KiB, or the whole rest of its range when less is left. A server that closes
    /// every response after 100 bytes otherwise gets a new try for ever (3,779 requests in 60 s
    /// were seen), since each one "progressed".
    ///
    /// | bytes gained by the try | rest of the range before it | progress |
    /// |---|---|---|
    /// | 100                     | 64 MiB                      | no       |
    /// | 65,535                  | 64 MiB                      | no       |
    /// | 65,536                  | 64 MiB                      | yes      |
    /// | 100                     | 100                         | yes      |
    package static let meagreTryBytes: Int64 = 64 << 10

    /// Whether a try that brought `gained` new bytes, when `rest` bytes of its range were left,
    /// is progress (see ``meagreTryBytes``).
    package static func isProgress(gained: Int64, rest: Int64) -> Bool {
        gained > 0 && gained >= min(meagreTryBytes, rest)
    }

    /// A segment received bytes beyond its best: the download progresses.
    package mutating func segmentProgressed() {
        failuresWithoutProgress = 0
    }

    /// Charges a failure of a segment whose failed tries so far are `segmentTries` (updated),
    /// when the download has received `receivedBytes`.
    package mutating func charge(_ blame: Blame, segmentTries: inout Int, receivedBytes: Int64) -> Decision {
        let progressed = receivedBytes > receivedAtLastFailure && receivedAtLastFailure >= 0
        receivedAtLastFailure = receivedBytes
        if progressed { failuresWithoutProgress = 0 }
        switch blame {
        case .segment: segmentTries += 1
        case .pushback: segmentTries = progressed ? 1 : segmentTries + 1
        case .none: break
        }
        let tries = max(1, segmentTries)
        // Not the segment's fault: bounded elsewhere (a source's re-resolutions, the sources left).
        guard blame != .none else { return .retry(tries: tries) }
        failuresWithoutProgress += 1
        if tries >= maximumTries || failuresWithoutProgress >= maximumTries + maximumConnections {
            return .giveUp(tries: tries)
        }
        return .retry(tries: tries)
    }
}
