/// What cutting busy requests costs in bytes served twice, and how much of that a download may
/// spend. A cut request still asks for its old end, and its server keeps sending until the request
/// stops at the cut: whatever was sent ahead by then (socket buffers, HTTP/2's window) is served
/// again to the request that took the tail over. On a loopback or LAN server that outruns its
/// reader that is most of the tail (64 MiB in 16 requests over h2 at `-n 16`: 30-80 requests,
/// 1.5-1.8x the file served), over a WAN about a round trip's worth. A pure rule, tested as a table.
///
/// | cut of a tail of `T` bytes           | expected waste                  |
/// |--------------------------------------|---------------------------------|
/// | no cut has stopped yet               | `T` (the server may send it all) |
/// | after cuts stopped `A` bytes ahead   | `min(T, 2A)`, `A` the most seen  |
///
/// `A` is what reached our end unread; the server's socket holds about as much again when our
/// end is full (on loopback, h2, 2 MiB tails: 0.5-1.0 MiB seen here, the whole 2 MiB served).
///
/// A cut is allowed while the expected waste of all cuts stays within the budget: a share of the
/// bytes the download had left when it started, or a floor for small ones. Takeovers (a slow or
/// stalled request cancelled) are not counted: little is in flight on a slow connection.
struct CutWaste: Sendable, Equatable {
    /// Share of the download's bytes that cuts may waste.
    var budgetFraction = 0.1
    /// The budget of a small download, bytes.
    var budgetFloor: Int64 = 1 << 20
    /// Bytes cuts may waste in all; `nil` until the download's size is known (``start(remaining:)``).
    private(set) var budget: Int64?
    /// Expected waste of the cuts made so far.
    private(set) var booked: Int64 = 0
    /// The most bytes seen ahead of a cut when its request stopped there; `nil` before any.
    private(set) var aheadBytes: Int64?

    /// Sets the budget from the bytes the download has left at its first decision (once).
    mutating func start(remaining: Int64) {
        if budget == nil { budget = max(budgetFloor, Int64(Double(remaining) * budgetFraction)) }
    }

    /// Bytes a cut of `rest` at `offset` is expected to have served twice.
    func expected(cutting rest: ByteRange, at offset: Int64) -> Int64 {
        let tail = max(0, rest.upper - offset)
        return min(tail, aheadBytes.map { 2 * $0 } ?? tail)
    }

    /// Whether the budget has room for a cut of `rest` at `offset`.
    func allows(cutting rest: ByteRange, at offset: Int64) -> Bool {
        booked + expected(cutting: rest, at: offset) <= budget ?? .max
    }

    mutating func book(cutting rest: ByteRange, at offset: Int64) {
        booked += expected(cutting: rest, at: offset)
    }

    /// A cut request stopped with `bytes` already sent past its cut (read with the last chunk or
    /// waiting unread on its connection).
    mutating func observe(aheadOfCut bytes: Int64) {
        aheadBytes = max(aheadBytes ?? 0, max(0, bytes))
    }
}
