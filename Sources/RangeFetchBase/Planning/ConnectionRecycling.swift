/// When a connection is replaced by a fresh one for its next range.
public enum ConnectionRecycling: Sendable, Equatable {
    /// Once the path has lost packets (a connection saw them arrive out of order): then, on
    /// links of round trips up to about 60 ms, a connection that has served 2 s or more is
    /// replaced. With losses a long-lived connection settles at the small window they allow,
    /// while a new one's slow start carries it well above that for a while. On a clean or
    /// long link the old one is faster.
    case afterLoss
    /// By age alone, as ``afterLoss`` does once the path has lost packets.
    case always
    /// Each connection serves ranges for as long as it lasts.
    case never
}
