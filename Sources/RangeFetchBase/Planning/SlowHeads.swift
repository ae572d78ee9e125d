/// How long requests to this server go slowly at their start before they go at full pace: a
/// slow head (an HTTP/2 server that begins every stream with tiny frames and PINGs, a backend
/// warming up, TCP's slow start on a long link). A request leaves its head when its speed reaches
/// ``exitFactor`` times its first measured speed; the age at which requests did is learnt. A
/// request not out of its head yet is not replaced while it is younger than ``graceFactor``
/// times the longest head seen: its replacement would start over in the same head, and the bytes
/// the server sends the moment the head ends would be served twice (against issue 33's h2
/// server, two takeovers a run at 46-64 KiB into 4 MiB requests: 1.2-1.35x the file served).
/// A pure rule, tested as a table.
///
/// | seen                                   | a request still in its head, age `a` |
/// |----------------------------------------|--------------------------------------|
/// | no request left a head yet             | judged as any                        |
/// | the longest head ended at age `L`      | spared while `a < 1.5 L`             |
/// | a head longer than ``capSeconds``      | counted as ``capSeconds``            |
///
/// On a server without a slow head, requests go at full pace from their first measure: none is
/// spared, and a trickling one is replaced as soon as before. A silent one never is spared.
///
/// Heads of at least ``serverHeadSetupTimes`` set-up times and ``serverHeadFloorSeconds`` (and at
/// most ``capSeconds``), seen twice, are the server's own (TCP's slow start lasts a few round
/// trips; issue 33's h2 server's heads last about 50 set-up times): every new connection pays
/// one, so `-n auto` stops adding connections.
package struct SlowHeads: Sendable, Equatable {
    /// A request leaves its head when its speed reaches this many times its first one.
    package var exitFactor = 8.0
    /// A request still in its head is spared this many times the longest head seen.
    package var graceFactor = 1.5
    /// Heads longer than this (seconds) count as this long: a stall is no head.
    package var capSeconds = 2.0
    /// Heads this many set-up times long are the server's own…
    package var serverHeadSetupTimes = 25.0
    /// …and at least this long (seconds): on a LAN a set-up time is under a millisecond, and a
    /// loaded machine's hiccup is no head. Longer than ``capSeconds``, it was a stall.
    package var serverHeadFloorSeconds = 0.2
    /// The longest slow start seen to end, seconds; `nil` before one.
    package private(set) var longestSeconds: Double?
    /// Heads seen to end at least ``serverHeadSetupTimes`` set-up times long (see ``recovered(atAge:setupSeconds:)``).
    package private(set) var serverHeads = 0

    /// Whether going from `first` to `speed` (bytes per second) leaves a head.
    package func isExit(from first: Double, to speed: Double) -> Bool { first > 0 && speed >= exitFactor * first }

    /// A request left its head at `age` seconds, on a path whose set-up takes `setupSeconds`.
    package mutating func recovered(atAge age: Double, setupSeconds: Double) {
        longestSeconds = min(capSeconds, max(longestSeconds ?? 0, age))
        if age >= max(serverHeadFloorSeconds, serverHeadSetupTimes * setupSeconds), age <= capSeconds { serverHeads += 1 }
    }

    /// Heads long enough, and seen often enough, to be the server's own.
    package var areTheServers: Bool { serverHeads >= 2 }

    /// Whether a request still in its head, `age` seconds old, is spared.
    package func spares(age: Double) -> Bool {
        longestSeconds.map { age < graceFactor * $0 } ?? false
    }
}
