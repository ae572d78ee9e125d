import RangeFetchBase

/// One HTTP request of a download that has ended, for `--verbose` listings: what it asked for,
/// what came back and how fast.
public struct RequestEnd: Sendable, Equatable {
    /// The bytes asked for; `nil` for a plain (non-ranged) request.
    public var range: ByteRange?
    /// The response's status code; 0 when no response arrived.
    public var status: Int
    /// Body bytes this request delivered.
    public var bytes: Int64
    /// Seconds from the request's start to its end.
    public var seconds: Double
    /// Failed tries of this range before this request (0: the first try).
    public var retry: Int
    /// Why the request failed, or `nil` when it ended well.
    public var failure: String?
    /// The response's HTTP version (`h1.1`, `h2`), when a response arrived.
    public var httpVersion: String?
    /// Whether the request opened a new connection (`false`: it reused an open one), when known.
    public var newConnection: Bool?
    /// Seconds the new connection took to set up (TCP, plus TLS over HTTPS), when it opened one.
    public var setupSeconds: Double?
    /// Seconds from the request's start to the response's first byte, when one arrived.
    public var firstByteSeconds: Double?
    /// Whether packets of this request's connection arrived out of order (losses on the path, or
    /// reordering), when known: what makes `recycleConnections = .afterLoss` start replacing
    /// connections.
    public var packetsOutOfOrder: Bool?

    /// A request's end, as the engine reports it.
    public init(range: ByteRange?, status: Int, bytes: Int64, seconds: Double, retry: Int, failure: String?,
                httpVersion: String? = nil) {
        self.range = range
        self.status = status
        self.bytes = bytes
        self.seconds = seconds
        self.retry = retry
        self.failure = failure
        self.httpVersion = httpVersion
    }

    /// Bytes per second over the request's life.
    public var bytesPerSecond: Double { seconds > 0 ? Double(bytes) / seconds : 0 }
}
