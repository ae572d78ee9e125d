import RangeFetchBase

/// Which requests may carry the user's secrets: one policy for every request a download makes
/// (the probe, ranges, mirror samples, re-resolved redirect targets, S3 listings).
///
/// Secrets belong to the origin (scheme, host, port) of the URL the user gave for them:
/// - `-u`/``RequestOptions/credentials``, `Authorization` and `Cookie` header lines, S3
///   signatures and the session token, and a netrc file's `default` entry go only to requests
///   for ``origin``;
/// - a netrc `machine` entry goes only to its own host;
/// - a mirror on another origin gets none of them (its URL may carry its own `user:password@`);
/// - a redirect libcurl follows by itself drops `-u` and those header lines at another host
///   (libcurl's own rule), and signed S3 requests are not followed at all.
///
/// A pure value: tested as a table.
package struct CredentialScope: Sendable, Equatable {
    /// The origin the secrets were given for; `nil`: the URL of each request itself (a bench or
    /// a probe made outside a download).
    package var origin: String?
    /// Logins read from a netrc file, when netrc is on.
    package var netrc: Netrc?
    /// Whether the netrc file was read (``netrc`` is `nil` when there was none).
    package var netrcRead = false
    /// The netrc's `machine` entries alone, for libcurl to look up at every host it reaches,
    /// redirects included (``Netrc/MachineFile``); `nil`: our own lookup for the first host only.
    package var machineFile: Netrc.MachineFile?

    /// What a request for `url` may carry.
    package struct Grant: Equatable {
        /// The user's secrets (credentials, sensitive header lines, the S3 signature).
        package var userSecrets: Bool
        /// A login from netrc to send as Basic credentials, when no other applies.
        package var netrcLogin: Netrc.Login?

        package init(userSecrets: Bool, netrcLogin: Netrc.Login? = nil) {
            self.userSecrets = userSecrets
            self.netrcLogin = netrcLogin
        }
    }

    package func grant(for url: String) -> Grant {
        guard let parts = URLParts(url) else { return Grant(userSecrets: false, netrcLogin: nil) }
        let own = origin.map { $0 == parts.origin } ?? true
        var login: Netrc.Login?
        if let netrc, parts.user == nil {
            // With the machine file libcurl finds a host's own entry itself (at every hop); the
            // `default` entry is ours to give, to the user's origin only.
            let machine = netrc.login(forHost: parts.host)
            login = machineFile != nil && machine != nil ? nil : machine ?? (own ? netrc.fallback : nil)
        }
        return Grant(userSecrets: own, netrcLogin: login)
    }

}
