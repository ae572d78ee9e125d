import RangeFetchBase
import CCurl

/// How a ``CurlLoop``'s requests use TCP connections.
///
/// HTTP versions are libcurl's defaults: HTTP/2 when a TLS server offers it (ALPN), HTTP/1.1 in
/// clear text. What the policy decides is multiplexing. libcurl 7.88 multiplexes by default, which
/// put every range of a download on one h2 connection: one TCP flow, held to a CDN's
/// per-connection cap or a lossy path's window (measured: 1 GiB behind a 25 MiB/s
/// per-connection cap took 42 s instead of 2.6 s). So big ranges get a connection each, still
/// speaking h2, one stream per connection.
package struct TransportPolicy: Equatable, Sendable {
    /// Requests to one origin may share an HTTP/2 connection as streams.
    package var multiplexes: Bool

    /// One request per TCP connection: what parallel ranges need to add up.
    package static let separateConnections = TransportPolicy(multiplexes: false)
    /// Requests share h2 connections: for many small requests, where a connection's setup costs
    /// more than its bandwidth matters.
    package static let multiplexed = TransportPolicy(multiplexes: true)

    /// `CURLMOPT_PIPELINING`'s value.
    package var pipelining: Int { multiplexes ? Int(CURLPIPE_MULTIPLEX) : Int(CURLPIPE_NOTHING) }

    /// Whether a request of `url` waits for the connection being opened to its origin to say
    /// whether it multiplexes (`CURLOPT_PIPEWAIT`, as `curl -Z` does) rather than opening one of
    /// its own: many small requests started at once then share one h2 connection instead of each
    /// racing the first one's TLS handshake (16 connections for 80 files at `-j 16`, seen on a
    /// loaded machine). Only over TLS, where h2 is offered: in clear text the answer would be
    /// known only once the first response came, and it is always HTTP/1.1.
    package func waitsToShare(_ url: String?) -> Bool {
        multiplexes && url?.prefix(8).lowercased() == "https://"
    }

    package init(multiplexes: Bool) {
        self.multiplexes = multiplexes
    }
}
