/// Which HTTP requests reach the RPC: a pure rule, tested as a table.
///
/// | `Host`                                   | `Origin`                                   | verdict                 |
/// |------------------------------------------|--------------------------------------------|-------------------------|
/// | not `localhost`, `127.0.0.1`, `[::1]` or the listening address (any port) | any | refused (DNS rebinding) |
/// | loopback, or none                        | none (not a browser)                       | allowed                 |
/// | loopback                                 | `http://` and that very Host (the daemon's own origin) | allowed     |
/// | loopback, or none                        | a loopback page (any port), or `null` (a file) | allowed with a secret, else refused |
/// | loopback, or none                        | another origin                             | allowed if all origins are (`--rpc-allow-origin-all`) or it is listed, else refused |
///
/// An allowed browser request is answered with `Access-Control-Allow-Origin` naming its origin.
struct RequestGuard: Sendable {
    /// The address the daemon listens on (another accepted `Host`).
    var listenAddress = "127.0.0.1"
    /// Whether calls must carry the secret token.
    var secretSet: Bool
    /// Every origin is allowed (`--rpc-allow-origin-all`).
    var allowOriginAll = false
    /// Origins allowed by name (`scheme://host[:port]`).
    var allowedOrigins: Set<String> = []

    enum Verdict: Sendable, Equatable {
        /// Allowed; the origin to name in `Access-Control-Allow-Origin`, if a browser asked.
        case allowed(corsOrigin: String?)
        /// Refused, with the reason (said in the 403's body).
        case refused(String)
    }

    func check(host: String?, origin: String?) -> Verdict {
        if let host, !isLocal(hostName(host)) {
            return .refused("Host '\(host)' is not this machine's loopback name; the daemon answers only localhost, 127.0.0.1 and [::1]")
        }
        guard let origin else { return .allowed(corsOrigin: nil) }
        if allowOriginAll || allowedOrigins.contains(origin) { return .allowed(corsOrigin: origin) }
        // The daemon's own origin (its own page; clients such as websocket-client that name the
        // address they call): the Host it was asked by is loopback, checked above.
        if let host, origin.lowercased() == "http://" + host.lowercased() { return .allowed(corsOrigin: origin) }
        let local = origin == "null" || originHost(origin).map(isLocal) == true
        if local, secretSet { return .allowed(corsOrigin: origin) }
        if local { return .refused("pages may call the daemon only when it has a secret (--rpc-secret)") }
        return .refused("Origin '\(origin)' is not allowed (pass --rpc-allow-origin-all or allow it by name)")
    }

    /// `name` of `name:port`, `[::1]` of `[::1]:port`, lower-cased.
    private func hostName(_ host: String) -> String {
        let lower = host.lowercased()
        if lower.hasPrefix("[") { return String(lower.prefix { $0 != "]" }) + "]" }
        return String(lower.prefix { $0 != ":" })
    }

    /// The host of `scheme://host[:port]`, for http and https origins only.
    private func originHost(_ origin: String) -> String? {
        let lower = origin.lowercased()
        for scheme in ["http://", "https://"] where lower.hasPrefix(scheme) {
            let rest = lower.dropFirst(scheme.count)
            guard !rest.contains("/"), !rest.contains("@") else { return nil }
            return hostName(String(rest))
        }
        return nil
    }

    private func isLocal(_ name: String) -> Bool {
        if name == "localhost" || name == "[::1]" || name == listenAddress.lowercased() { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
