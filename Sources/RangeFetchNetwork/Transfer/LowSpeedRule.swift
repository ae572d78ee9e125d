import RangeFetchBase
import CCurl

/// When a request that still delivers, but far too slowly, is given up and tried again.
///
/// The silent-connection rule (``RequestOptions/stallTimeoutSeconds``) catches a connection that
/// sends nothing; a server that trickles a byte or two a second passes it forever (a 100 kB file
/// would take 14 hours). This rule asks each request of a download for a floor over every whole
/// window of ``windowSeconds`` from its start: below it, the request is aborted, its bytes kept,
/// and the rest retried on a fresh connection like any transient failure (a try that ends this
/// way counts as a try without progress, however many bytes trickled in).
///
/// The floor is the whole download's: ``bytesPerSecond`` shared by the requests running at once
/// (many connections on a slow link each get a share, and are not punished for it), and at most
/// a quarter of a `maximumBytesPerSecond` cap (a download the user slows down is not cut; a
/// request the cap holds paused starts a new window).
///
/// | bytesPerSecond      | cap       | requests at once | floor per request  |
/// |---------------------|-----------|------------------|--------------------|
/// | 1024 (default)      | none      | 1                | 1024 B/s           |
/// | 1024                | none      | 16               | 64 B/s             |
/// | 1024                | 2048 B/s  | 1                | 512 B/s            |
/// | 1024                | 2048 B/s  | 4                | 128 B/s            |
/// | 0                   | any       | any              | off                |
///
/// With the defaults (1 KiB/s, 30 s), a request has 30 s to deliver 30 KiB (its connection
/// set-up included), then each following 30 s as well.
public struct LowSpeedRule: Sendable, Equatable {
    /// The lowest acceptable speed of the whole download, bytes per second; 0 turns the rule off.
    public var bytesPerSecond: Int64 = 1024
    /// The window over which a request's speed is measured, seconds.
    public var windowSeconds: Double = 30

    /// The defaults: 1 KiB/s over 30 s.
    public init(bytesPerSecond: Int64 = 1024, windowSeconds: Double = 30) {
        self.bytesPerSecond = bytesPerSecond
        self.windowSeconds = windowSeconds
    }

    /// Whether the rule applies at all.
    public var isEnabled: Bool { bytesPerSecond > 0 && windowSeconds > 0 }

    /// The floor for each of `requests` requests running at once, bytes per second (see the table).
    package func floorPerRequest(requests: Int, maximumBytesPerSecond: Int64?) -> Double {
        guard isEnabled else { return 0 }
        var total = Double(bytesPerSecond)
        if let cap = maximumBytesPerSecond { total = min(total, Double(cap) / 4) }
        return total / Double(max(1, requests))
    }
}

/// One request's record against a ``LowSpeedRule``: consecutive windows from its start.
package struct LowSpeedWindow: Sendable, Equatable {
    private var startTime: Double
    private var startBytes: Int64

    /// A request that started at `now`, with nothing received.
    package init(now: Double) {
        startTime = now
        startBytes = 0
    }

    /// Starts a new window at `now`: time a request spends paused by a `--max-speed` cap is
    /// the user's choice, not the server's slowness.
    package mutating func restart(now: Double, bytes: Int64) {
        startTime = now
        startBytes = bytes
    }

    /// `bytes` received in all by `now`: the speed of the window that just ended when it was
    /// below `floor` (give the request up), else `nil` (a window that ended fast enough starts
    /// the next one).
    package mutating func check(now: Double, bytes: Int64, floor: Double, windowSeconds: Double) -> Double? {
        let elapsed = now - startTime
        guard floor > 0, windowSeconds > 0, elapsed >= windowSeconds else { return nil }
        let speed = Double(bytes - startBytes) / elapsed
        if speed < floor { return speed }
        startTime = now
        startBytes = bytes
        return nil
    }
}

extension LowSpeedRule {
    /// `URL: the server sent 2 B/s over 10 s, below the lowest speed accepted (1 KiB/s per request)`.
    package static func slowMessage(url: String, speed: Double, floor: Double, seconds: Double) -> String {
        let rate = { (value: Double) in "\(ByteCount.format(Int64(value)))/s" }
        let window = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
        return "\(Redaction.url(url)): the server sent \(rate(speed)) over \(window) s, below the lowest speed accepted (\(rate(floor)) per request)"
    }

    /// The `requests` under the floor now, each with the error that ends it. A paused request
    /// (`--max-speed`) starts its window again instead.
    package func slowRequests(_ requests: [SegmentTransfer], now: Double, maximumBytesPerSecond: Int64?) -> [(SegmentTransfer, DownloadError)] {
        guard isEnabled else { return [] }
        let floor = floorPerRequest(requests: requests.count, maximumBytesPerSecond: maximumBytesPerSecond)
        var slow: [(SegmentTransfer, DownloadError)] = []
        for transfer in requests {
            if transfer.isPaused {
                transfer.lowSpeed.restart(now: now, bytes: transfer.bytesReceived)
            } else if let speed = transfer.lowSpeed.check(now: now, bytes: transfer.bytesReceived, floor: floor,
                                                          windowSeconds: windowSeconds) {
                let message = Self.slowMessage(url: transfer.url, speed: speed, floor: floor, seconds: windowSeconds)
                slow.append((transfer, DownloadError(.transport(curlCode: Int32(CURLE_OPERATION_TIMEDOUT.rawValue)), message,
                                                     url: transfer.url)))
            }
        }
        return slow
    }
}
