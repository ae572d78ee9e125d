import RangeFetchBase
import RangeFetchNetwork

/// What a sweep means: the knee (the connection count worth using) and the likely limit.
/// A pure function of the measured steps.
package struct BenchVerdict: Sendable, Equatable {
    /// The likely bottleneck.
    public enum Limit: String, Sendable {
        /// Each connection is capped: throughput grows with the count.
        case perConnectionCap = "per-connection cap"
        /// One connection already reaches what the link or the server gives.
        case linkOrServer = "link or server"
        /// rangefetch's own measuring thread is busy all the time.
        case cpu = "CPU"
        /// Writing to disk is slower than receiving.
        case disk = "disk"
        /// The server refuses connections beyond a count (HTTP 429 or 503 from some count on).
        case connectionLimit = "server refuses connections"
        /// The server refuses some requests at every count (HTTP 429 or 503): shedding load.
        case pushback = "server pushback"
        /// Only one plain stream could be measured.
        case oneStream = "one stream only"
        /// Nothing arrived.
        case none = "nothing measured"
    }

    /// The smallest count whose median throughput is within 5 % of the best step's.
    public var recommendedConnections: Int
    /// The fastest step.
    public var best: (connections: Int, bytesPerSecond: Double)
    /// What limits the speed.
    public var limit: Limit
    /// One sentence for people.
    public var summary: String

    /// A measuring thread busier than this share of one core is the limit itself.
    static let busyCoreShare = 0.85
    /// Growth from the first step to the best above which connections are capped (1.5: +50 %).
    static let cappedGrowth = 1.5
    /// The last step's growth over the one before at or above which the sweep is "still growing"
    /// (1.25: +25 %); below it, the gains are flattening.
    static let stillGrowing = 1.25
    /// Disk sink slower than this share of the null sink at the same count: the disk limits.
    static let diskShare = 0.85

    /// Equal when every judged value is.
    public static func == (a: BenchVerdict, b: BenchVerdict) -> Bool {
        a.recommendedConnections == b.recommendedConnections && a.best == b.best && a.limit == b.limit && a.summary == b.summary
    }

    /// Judges `steps`; see the type's notes.
    public init(steps: [BenchStep], oneStreamReason: String? = nil, nullSinkAtKnee: BenchStep? = nil) {
        guard let bestStep = steps.max(by: { $0.medianBytesPerSecond < $1.medianBytesPerSecond }),
              bestStep.medianBytesPerSecond > 0 else {
            recommendedConnections = 1
            best = (1, 0)
            limit = .none
            summary = "nothing was received, so there is no verdict"
            return
        }
        let bestRate = bestStep.medianBytesPerSecond
        best = (bestStep.connections, bestRate)
        let knee = steps.first { $0.medianBytesPerSecond * BenchPlan.growthThreshold >= bestRate } ?? bestStep
        recommendedConnections = knee.connections
        let rate = { (value: Double) in ByteCount.format(Int64(value)) + "/s" }
        if let oneStreamReason {
            limit = .oneStream
            summary = "one stream only (\(oneStreamReason)): \(rate(bestRate)); more connections cannot be measured"
            return
        }
        if let judged = Self.pushback(steps) {
            (limit, summary) = (judged.limit, judged.summary)
            if let ceiling = judged.ceiling { recommendedConnections = min(recommendedConnections, ceiling) }
            return
        }
        if let null = nullSinkAtKnee, null.medianBytesPerSecond > 0,
           knee.medianBytesPerSecond < null.medianBytesPerSecond * Self.diskShare {
            limit = .disk
            summary = "disk: writing reaches \(rate(knee.medianBytesPerSecond)) at \(knee.connections) connections, discarding the bytes \(rate(null.medianBytesPerSecond))"
            return
        }
        if bestStep.cpuCores >= Self.busyCoreShare {
            limit = .cpu
            summary = "CPU: rangefetch kept \(formatDecimal(bestStep.cpuCores * 100, places: 0)) % of a core busy at \(rate(bestRate)); the network may be faster than this machine can take"
            return
        }
        let first = steps[0]
        let growth = first.medianBytesPerSecond > 0 ? bestRate / first.medianBytesPerSecond : .infinity
        if growth >= Self.cappedGrowth {
            limit = .perConnectionCap
            let head = "per-connection cap: \(first.connections) connection\(first.connections == 1 ? "" : "s") got \(rate(first.medianBytesPerSecond)), \(bestStep.connections) got \(rate(bestRate))"
            if knee.connections == steps.last?.connections, steps.count > 1 {
                let previous = steps[steps.count - 2]
                if knee.medianBytesPerSecond >= previous.medianBytesPerSecond * Self.stillGrowing {
                    summary = head + (knee.connections >= DownloadOptions.connectionRange.upperBound
                        ? "; still growing at \(knee.connections), the most connections a download opens"
                        : "; still growing at the largest count measured, so more connections may help")
                } else {
                    summary = head + "; gains flatten by \(knee.connections) (\(previous.connections) got \(rate(previous.medianBytesPerSecond))), so the link or server is near its limit"
                }
            } else {
                summary = head + "; beyond \(knee.connections) the link or server is the limit"
            }
        } else {
            limit = .linkOrServer
            let gain = bestStep.connections == first.connections ? "more connections add nothing"
                : "\(bestStep.connections) add only \(formatDecimal((growth - 1) * 100, places: 0)) %"
            summary = "link or server: \(first.connections) connection\(first.connections == 1 ? "" : "s") already reach\(first.connections == 1 ? "es" : "") \(rate(first.medianBytesPerSecond)); \(gain)"
        }
    }

    /// What refusals (HTTP 429, 503) say, when there were any. A count's doing when no step
    /// below the first refused one was refused, every step from it on was, and the most
    /// responses streaming at once (admitted) stayed below the last step's count even after
    /// refused requests were sent again; the most admitted is the server's limit:
    ///
    /// | steps (connections: refused, most admitted) | limit                                        | ceiling |
    /// |---------------------------------------------|----------------------------------------------|---------|
    /// | 4: 0, 8: 4 (8), 16: 40 (8)                  | ``Limit/connectionLimit`` "refuses more than 8" | 8    |
    /// | 1: 3, 2: 5, 4: 9                            | ``Limit/pushback`` (at every count)          | -       |
    /// | 1: 0, 2: 4 (2), 4: 3 (4)                    | ``Limit/pushback`` (each was admitted again) | -       |
    /// | 1: 0, 2: 4, 4: 0                            | ``Limit/pushback`` (not a count's doing)     | -       |
    /// | none refused                                | nil (the speeds decide)                      | -       |
    static func pushback(_ steps: [BenchStep]) -> (limit: Limit, summary: String, ceiling: Int?)? {
        guard let first = steps.firstIndex(where: { $0.pushbacks > 0 }) else { return nil }
        let status = steps[first].pushbackStatus ?? 503
        let share = { (step: BenchStep) in "\(step.pushbacks) of \(step.requests) requests" }
        let refusedSteps = steps[first...]
        let admitted = refusedSteps.map(\.admittedConnections).max() ?? 0
        if first > 0, refusedSteps.allSatisfy({ $0.pushbacks > 0 }), let last = refusedSteps.last,
           admitted > 0, admitted < last.connections {
            let ceiling = max(admitted, steps[first - 1].connections)
            return (.connectionLimit,
                    "the server refuses more than \(ceiling) connections (HTTP \(status)): at \(last.connections) it refused \(share(last)), so more than \(ceiling) add nothing",
                    ceiling)
        }
        let total = steps.reduce(0) { $0 + $1.pushbacks }, sent = steps.reduce(0) { $0 + $1.requests }
        let steady = first == 0 && steps.allSatisfy { $0.pushbacks > 0 }
        return (.pushback,
                "the server pushed back: HTTP \(status) to \(total) of \(sent) requests\(steady ? " at every count" : ""), each sent again after a pause, so these speeds are below what the link gives",
                nil)
    }
}
