import RangeFetchBase

/// Bounds on what rangefetch believes from a server's response head, so a hostile or broken
/// server gets a clear error instead of a crash, an overflow or an allocation of its choosing.
///
/// libcurl 7.88.1 (Debian 12, measured) has limits of its own: a single header line over 100 KiB
/// fails with `CURLE_OUT_OF_MEMORY` and no message, and more than 300 KiB of headers in one
/// transfer fails with `CURLE_RECV_ERROR` ("Too large response headers: N > 307200"). It lets
/// through any number of short lines (10,000 lines of 20 bytes arrive one by one), so the line
/// count is ours to bound.
///
/// So heads are accepted up to libcurl's own ceiling: a head of 2,000 header lines and 290 KiB
/// downloads. A browser would take a 1 MiB head; no libcurl can (`curl` itself exits 56 there),
/// so past 300 KiB the answer is one clear error naming the limit.
package enum ResponseLimits {
    /// Bytes of one response head (status line and header lines, CRLFs included) we accept:
    /// libcurl's own limit for all heads of a transfer (300 KiB), so a head libcurl would take
    /// is never refused by us. A real server's head is a few KiB.
    package static let maximumHeadBytes = 300 << 10
    /// Header lines of one response head (status line included) we accept: enough for any head
    /// libcurl takes with lines of 30 bytes or more, and a bound on the work of 4-byte lines.
    package static let maximumHeadLines = 10_000
    /// The largest `Content-Length` or complete length (bytes) believed: 4 EiB. Larger values
    /// are absurd for a file and would overflow the offset arithmetic of a plan.
    package static let maximumContentLength: Int64 = 1 << 62
    /// How much of an unusable header value an error message quotes, in characters.
    package static let quotedValueCharacters = 40

    /// `value` shortened for an error message, with an ellipsis when cut.
    package static func quoted(_ value: String) -> String {
        value.count <= quotedValueCharacters ? value : String(value.prefix(quotedValueCharacters)) + "…"
    }
}
