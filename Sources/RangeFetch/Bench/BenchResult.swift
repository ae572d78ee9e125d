import RangeFetchBase
import RangeFetchNetwork

/// One run of one step: `connections` ranged requests in parallel, measured.
package struct BenchSample: Sendable, Equatable {
    /// Connections of the step.
    public var connections: Int
    /// Bytes received (`--sink null`) or written (`--sink disk`) by all connections.
    public var bytes: Int64
    /// Wall-clock seconds from the first request to the last byte (or the deadline).
    public var seconds: Double
    /// Each connection's bytes per second over its own lifetime.
    public var connectionBytesPerSecond: [Double]
    /// Median over connections of seconds from the request to the first response byte.
    public var timeToFirstByteSeconds: Double
    /// Median over connections of seconds to set up the TCP (and TLS) connection.
    public var connectSeconds: Double
    /// User plus system CPU seconds this process used during the run (`getrusage`).
    public var cpuSeconds: Double
    /// Requests retried after a transport failure.
    public var retries: Int
    /// Requests sent, pushed-back ones and retries included.
    public var requests: Int
    /// Requests the server refused for now (HTTP 429 or 503) and that were sent again after a
    /// pause: pushback, not failures.
    public var pushbacks: Int
    /// The status of those refusals (429 or 503), when there were any.
    public var pushbackStatus: Int?
    /// The most responses streaming the file at once (sampled at least every 50 ms; 0 when not
    /// observed).
    public var admittedConnections: Int
    /// The most TCP connections open at once during the run: one per range, also over HTTP/2
    /// (0 when not observed).
    public var tcpConnections: Int
    /// The HTTP version the responses came in (`h1.1`, `h2`), when known.
    public var httpVersion: String?

    /// One measured run.
    public init(connections: Int, bytes: Int64, seconds: Double, connectionBytesPerSecond: [Double],
                timeToFirstByteSeconds: Double, connectSeconds: Double, cpuSeconds: Double, retries: Int,
                requests: Int = 0, pushbacks: Int = 0, pushbackStatus: Int? = nil, admittedConnections: Int = 0,
                tcpConnections: Int = 0, httpVersion: String? = nil) {
        self.connections = connections
        self.bytes = bytes
        self.seconds = seconds
        self.connectionBytesPerSecond = connectionBytesPerSecond
        self.timeToFirstByteSeconds = timeToFirstByteSeconds
        self.connectSeconds = connectSeconds
        self.cpuSeconds = cpuSeconds
        self.retries = retries
        self.requests = requests
        self.pushbacks = pushbacks
        self.pushbackStatus = pushbackStatus
        self.admittedConnections = admittedConnections
        self.tcpConnections = tcpConnections
        self.httpVersion = httpVersion
    }

    /// Aggregate throughput, bytes per second.
    public var bytesPerSecond: Double { seconds > 0 ? Double(bytes) / seconds : 0 }
}

/// One step of the sweep: every run at one connection count, summarised.
package struct BenchStep: Sendable, Equatable {
    /// Connections of the step.
    public var connections: Int
    /// Its runs.
    public var samples: [BenchSample]

    /// A step of `connections` from its runs.
    public init(connections: Int, samples: [BenchSample]) {
        self.connections = connections
        self.samples = samples
    }

    /// Median aggregate throughput over the runs, bytes per second.
    public var medianBytesPerSecond: Double { median(samples.map(\.bytesPerSecond)) }
    /// The slowest run's speed, bytes per second.
    public var minimumBytesPerSecond: Double { samples.map(\.bytesPerSecond).min() ?? 0 }
    /// The fastest run's speed, bytes per second.
    public var maximumBytesPerSecond: Double { samples.map(\.bytesPerSecond).max() ?? 0 }
    /// The slowest connection of each run, median over runs.
    public var slowestConnectionBytesPerSecond: Double { median(samples.map { $0.connectionBytesPerSecond.min() ?? 0 }) }
    /// The fastest connection of each run, median over runs.
    public var fastestConnectionBytesPerSecond: Double { median(samples.map { $0.connectionBytesPerSecond.max() ?? 0 }) }
    /// Median seconds from the request to its first body byte.
    public var timeToFirstByteSeconds: Double { median(samples.map(\.timeToFirstByteSeconds)) }
    /// Median seconds to connect (TCP, and TLS where it applies).
    public var connectSeconds: Double { median(samples.map(\.connectSeconds)) }
    /// Median bytes a run moved.
    public var medianBytes: Int64 { Int64(median(samples.map { Double($0.bytes) })) }
    /// Median seconds a run took.
    public var medianSeconds: Double { median(samples.map(\.seconds)) }
    /// CPU seconds per GiB over all runs of the step.
    public var cpuSecondsPerGiB: Double {
        let bytes = samples.reduce(Int64(0)) { $0 + $1.bytes }
        guard bytes > 0 else { return 0 }
        return samples.reduce(0) { $0 + $1.cpuSeconds } / (Double(bytes) / Double(1 << 30))
    }
    /// CPU seconds per wall-clock second (1.0: one core busy), over all runs.
    public var cpuCores: Double {
        let seconds = samples.reduce(0) { $0 + $1.seconds }
        return seconds > 0 ? samples.reduce(0) { $0 + $1.cpuSeconds } / seconds : 0
    }
    /// Requests retried in all runs.
    public var retries: Int { samples.reduce(0) { $0 + $1.retries } }
    /// Requests sent in all runs.
    public var requests: Int { samples.reduce(0) { $0 + $1.requests } }
    /// Requests refused with 429 or 503 in all runs (sent again after a pause).
    public var pushbacks: Int { samples.reduce(0) { $0 + $1.pushbacks } }
    /// The status of those refusals, when there were any.
    public var pushbackStatus: Int? { samples.lazy.compactMap(\.pushbackStatus).first }
    /// The most responses streaming at once in any run.
    public var admittedConnections: Int { samples.map(\.admittedConnections).max() ?? 0 }
    /// The most TCP connections any run had open at once.
    public var tcpConnections: Int { samples.map(\.tcpConnections).max() ?? 0 }
    /// The HTTP version of the step's responses, when known.
    public var httpVersion: String? { samples.lazy.compactMap(\.httpVersion).first }
}

/// The middle value (the mean of the two middle values for an even count); 0 when empty.
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Everything `rangefetch bench` found.
package struct BenchReport: Sendable, Equatable {
    /// What was measured.
    public var url: String
    /// The file's size, when the server gave it.
    public var size: Int64?
    /// Where the bytes went.
    public var sink: BenchPlan.Sink
    /// Set when only one plain stream could be measured, saying why (no ranges, unknown size).
    public var oneStreamReason: String?
    /// Every step measured, in order.
    public var steps: [BenchStep]
    /// With `--sink disk`: the same measurement at the knee with bytes discarded, to tell a
    /// disk limit from a network one.
    public var nullSinkAtKnee: BenchStep?
    /// Online processors (`sysconf(_SC_NPROCESSORS_ONLN)`).
    public var processors: Int

    /// What the steps say: the best count and what limits the speed.
    public var verdict: BenchVerdict {
        BenchVerdict(steps: steps, oneStreamReason: oneStreamReason, nullSinkAtKnee: nullSinkAtKnee)
    }
}
