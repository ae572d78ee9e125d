/// A segment as the scheduler sees it: what is still to fetch and who, if anyone, fetches it.
package struct SchedulerSegment: Sendable, Equatable {
    package var id: Int
    /// Bytes neither written nor buffered yet.
    package var outstanding: ByteRange
    /// The request working on it, if any.
    package var transfer: SchedulerTransfer?
    /// Monotonic time before which it must not be (re)started (retry backoff).
    package var readyAt: Double = 0

    package init(id: Int, outstanding: ByteRange, transfer: SchedulerTransfer? = nil, readyAt: Double = 0) {
        self.id = id
        self.outstanding = outstanding
        self.transfer = transfer
        self.readyAt = readyAt
    }
}

/// One in-flight request, as the scheduler sees it.
package struct SchedulerTransfer: Sendable, Equatable {
    /// Unique per request (a replacement gets a new one).
    package var id: Int
    package var startedAt: Double
    /// Body bytes this request has delivered so far.
    package var receivedBytes: Int64
    /// When its first body byte arrived, if it has.
    package var firstByteAt: Double?
    /// Its bytes count only once it ends whole (a range proven by its own `Content-Digest`): it
    /// cannot be cut, and cancelling it throws away all it delivered.
    package var provenOnlyWhole = false
    /// It has delivered nothing yet while bytes wait unread on its connection: the server has
    /// answered, and this machine is slow to read (a loaded one). It is not replaced for it.
    package var bytesWaiting = false

    package init(id: Int, startedAt: Double, receivedBytes: Int64, firstByteAt: Double? = nil,
                 provenOnlyWhole: Bool = false, bytesWaiting: Bool = false) {
        self.id = id
        self.startedAt = startedAt
        self.receivedBytes = receivedBytes
        self.firstByteAt = firstByteAt
        self.provenOnlyWhole = provenOnlyWhole
        self.bytesWaiting = bytesWaiting
    }
}

/// What the engine should do next on libcurl.
package enum SchedulerAction: Sendable, Equatable {
    /// Start the idle segment on a connection.
    case start(segment: Int)
    /// Cut the busy segment at `offset`: its request keeps `[.., offset)`, and `[offset, end)`
    /// becomes a new segment started on another connection. When `offset` is where the request
    /// stands now, it is cancelled: the new connection takes over the whole rest (a slow or
    /// stalled connection is replaced, whatever the size of its rest).
    case split(segment: Int, at: Int64)
}
