@testable import RangeFetchNetwork
import Testing

/// When a request waits for a connection that may multiplex (`CURLOPT_PIPEWAIT`) instead of
/// opening its own.
@Suite struct TransportPolicyTests {
    @Test(arguments: [
        (TransportPolicy.multiplexed, "https://example.test/a", true),
        (.multiplexed, "HTTPS://example.test/a", true),
        (.multiplexed, "http://example.test/a", false),   // clear text: always HTTP/1.1 here
        (.multiplexed, nil, false),
        (.separateConnections, "https://example.test/a", false),
        (.separateConnections, "http://example.test/a", false),
    ] as [(TransportPolicy, String?, Bool)])
    func waitsToShareOnlyWhenItMultiplexesOverTLS(policy: TransportPolicy, url: String?, waits: Bool) {
        #expect(policy.waitsToShare(url) == waits)
    }
}
