/// A segment as the scheduler sees it: what is still to fetch and who, if anyone, fetches it.
struct SchedulerSegment: Sendable, Equatable {
    var id: Int
    /// Bytes neither written nor buffered yet.
    var outstanding: ByteRange
    /// The request working on it, if any.
    var transfer: SchedulerTransfer?
    /// Monotonic time before which it must not be (re)started (retry backoff).
    var readyAt: Double = 0
}

/// One in-flight request, as the scheduler sees it.
struct SchedulerTransfer: Sendable, Equatable {
    /// Unique per request (a replacement gets a new one).
    var id: Int
    var startedAt: Double
    /// Body bytes this request has delivered so far.
    var receivedBytes: Int64
    /// When its first body byte arrived, if it has.
    var firstByteAt: Double?
    /// Its bytes count only once it ends whole (a range proven by its own `Content-Digest`): it
    /// cannot be cut, and cancelling it throws away all it delivered.
    var provenOnlyWhole = false
    /// It has delivered nothing yet while bytes wait unread on its connection: the server has
    /// answered, and this machine is slow to read (a loaded one). It is not replaced for it.
    var bytesWaiting = false
}

/// What the engine should do next on libcurl.
enum SchedulerAction: Sendable, Equatable {
    /// Start the idle segment on a connection.
    case start(segment: Int)
    /// Cut the busy segment at `offset`: its request keeps `[.., offset)`, and `[offset, end)`
    /// becomes a new segment started on another connection. When `offset` is where the request
    /// stands now, it is cancelled: the new connection takes over the whole rest (a slow or
    /// stalled connection is replaced, whatever the size of its rest).
    case split(segment: Int, at: Int64)
}
