/// What cutting busy requests costs in bytes served twice, and how much of that a download may
/// spend. A cut request still asks for its old end, and its server keeps sending until the request
/// stops at the cut: whatever was sent ahead by then (socket buffers, HTTP/2's window, the bytes
/// on the wire) is served again to the request that took the tail over. On a loopback or LAN
/// server that outruns its reader that is most of the tail (64 MiB in 16 requests over h2 at
/// `-n 16`: 30-80 requests, 1.5-1.8x the file served), over a WAN about a round trip's worth. A
/// pure rule, tested as a table.
///
/// | a cut of a tail of `T` bytes, its request at `v` B/s          | expected waste       |
/// |----------------------------------------------------------------|----------------------|
/// | no cut request seen stopping yet                               | `T` (all may be sent) |
/// | one seen stopping with our receive window full                 | `T`, from then on    |
/// | cut requests seen stopping `A` bytes past their cut            | `min(T, max(2A, v × RTT))` |
///
/// `A` is the most seen waiting unread at our end; the server's socket holds about as much again
/// while our window is open; `v × RTT` are the bytes on the wire. But a queue at our receive
/// window's limit (at least half the connection's receive space, `tcpi_rcv_space`, from which the
/// kernel grows the window it advertises) says the server was held back by us, and its own send
/// buffer (megabytes, autotuned) holds what we cannot see: over HTTP/2 from a loopback server,
/// requests stopped 160-250 KiB past their cuts with their queues full, and the server had sent
/// every 2 MiB tail whole. Every cut made is counted again with what is known now, so the first
/// cuts' pessimistic guesses are corrected once a cut request stops.
///
/// A cut is allowed while the expected waste of all cuts made stays within the budget: a share
/// of the bytes the download had left when it started, or a floor for small ones. Takeovers (a
/// slow or stalled request cancelled) are not counted: little is in flight on a slow connection.
package struct CutWaste: Sendable, Equatable {
    /// Share of the download's bytes that cuts may waste.
    package var budgetFraction = 0.1
    /// The budget of a small download, bytes.
    package var budgetFloor: Int64 = 1 << 20
    /// Bytes cuts may waste in all; `nil` until the download's size is known (``start(remaining:)``).
    package private(set) var budget: Int64?
    /// The cuts made: each one's tail and the bytes its request had on the wire (`v × RTT`).
    package private(set) var cuts: [Cut] = []
    /// The most bytes seen past a cut when its request stopped there; `nil` before any.
    package private(set) var aheadBytes: Int64?
    /// A cut request stopped with our receive window full: the server may send tails whole.
    package private(set) var windowWasFull = false

    /// What waited unread on a request's connection when it stopped at its cut.
    package struct Unread: Sendable, Equatable {
        /// Bytes sent past the cut: the last chunk's rest and the connection's receive queue.
        package var bytes: Int64
        /// The connection's receive space (`tcpi_rcv_space`), bytes; `nil` when unknown.
        package var receiveSpace: Int64?

        /// Whether the queue was at the window's limit: at least half the receive space (the
        /// window advertised is about twice it).
        package var windowFull: Bool { receiveSpace.map { $0 > 0 && 2 * bytes >= $0 } ?? false }

        package init(bytes: Int64, receiveSpace: Int64? = nil) {
            self.bytes = bytes
            self.receiveSpace = receiveSpace
        }
    }

    package struct Cut: Sendable, Equatable {
        package var tail: Int64
        package var onTheWire: Int64

        package init(tail: Int64, onTheWire: Int64) {
            self.tail = tail
            self.onTheWire = onTheWire
        }
    }

    /// Sets the budget from the bytes the download has left when it starts (once).
    package mutating func start(remaining: Int64) {
        if budget == nil { budget = max(budgetFloor, Int64(Double(remaining) * budgetFraction)) }
    }

    /// Bytes `cut` is expected to have served twice.
    package func expected(_ cut: Cut) -> Int64 {
        let tail = max(0, cut.tail)
        guard !windowWasFull, let aheadBytes else { return tail }
        return min(tail, max(2 * aheadBytes, cut.onTheWire))
    }

    /// Expected waste of the cuts made so far.
    package var booked: Int64 { cuts.reduce(0) { $0 + expected($1) } }

    /// Whether the budget has room for `cut` (beside `pending` ones proposed but not made yet).
    package func allows(_ cut: Cut, pending: Int64 = 0) -> Bool {
        booked + pending + expected(cut) <= budget ?? .max
    }

    /// A cut was made.
    package mutating func made(_ cut: Cut) { cuts.append(cut) }

    /// A cut request stopped with `unread` already sent past its cut (read with the last chunk
    /// or waiting unread on its connection).
    package mutating func observe(aheadOfCut unread: Unread) {
        aheadBytes = max(aheadBytes ?? 0, max(0, unread.bytes))
        if unread.windowFull { windowWasFull = true }
    }
}
