import RangeFetchBase
import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// How every request of a download is made: headers, credentials, TLS and timeouts.
public struct RequestOptions: Sendable, Equatable {
    /// Extra request header lines, `Name: value`.
    ///
    /// Every request asks for `Accept-Encoding: identity` (RFC 9110: a request without the field
    /// accepts any coding, and some servers then gzip). An `Accept-Encoding` line here replaces
    /// it on requests for the whole body (the probe and a single stream), for a user who wants a
    /// compressed transfer; whatever coding comes back (gzip, deflate, br, zstd) is decoded before
    /// it is written. Ranged requests always ask for identity: ranges of an encoded body are not
    /// ranges of the file.
    public var headers: [String] = []
    /// `User-Agent` sent with every request.
    public var userAgent: String = "rangefetch/\(RangeFetchVersion.string)"
    /// `user:password` for HTTP Basic authentication (also taken from the URL's userinfo).
    public var credentials: String?
    /// Skip TLS certificate verification. Off by default; say so loudly when on.
    public var insecure = false
    /// A PEM bundle of CA certificates to trust instead of the system's.
    public var caCertificatePath: String?
    /// A directory of CA certificates named by their hashes (`openssl rehash`, OpenSSL's
    /// `SSL_CERT_DIR`), trusted as well as ``caCertificatePath`` (libcurl's `CURLOPT_CAPATH`).
    public var caCertificateDirectory: String?
    /// Seconds allowed to establish a connection.
    public var connectTimeoutSeconds: Int = 20
    /// Redirects followed at most; credentials are not sent to a different host.
    public var maximumRedirects: Int = 10
    /// A transfer that receives fewer than ``stallBytesPerSecond`` for this many seconds is
    /// aborted and retried (it never silently hangs).
    public var stallTimeoutSeconds: Int = 30
    /// See ``stallTimeoutSeconds``.
    public var stallBytesPerSecond: Int = 1
    /// A request that still delivers, but below this floor, is given up and retried (see the rule's table).
    public var lowSpeed = LowSpeedRule()
    /// Cap on the whole download's speed in bytes per second, shared across connections; `nil`: none.
    /// Enforced by the engine's own token bucket (libcurl 7.88 ignores `CURLOPT_MAX_RECV_SPEED_LARGE`
    /// on requests that carry `CURLOPT_RANGE`, measured here).
    public var maximumBytesPerSecond: Int64?

    /// A cap that may change while the download runs (the daemon's live limits); when given, it
    /// rules instead of ``maximumBytesPerSecond``.
    public var speedControl: SpeedControl?

    /// A proxy for every request (`http://`, `https://`, `socks5h://` …), instead of what the
    /// `http_proxy`/`https_proxy`/`all_proxy` variables say; `""` uses none.
    public var proxy: String?
    /// Header lines, `Name: value`, sent to the proxy only, never to the origin (curl's
    /// `--proxy-header`): on the `CONNECT` that opens an `https` tunnel, and on each request an
    /// `http` proxy forwards. For a proxy's own business, such as a cache key hint or a P2P
    /// daemon's tag; with no proxy in use they are not sent at all. Lines in ``headers`` never go
    /// on a `CONNECT`.
    public var proxyHeaders: [String] = []
    /// Hosts reached directly, not through a proxy (comma-separated, as `no_proxy`).
    public var noProxy: String?
    /// Read login and password for a host from a netrc file when the URL and ``credentials``
    /// give none (as wget2 and aria2c do with `~/.netrc`).
    public var netrc = true
    /// The netrc file; `nil`: `~/.netrc`.
    public var netrcFile: String?
    /// `HOST:PORT:ADDRESS[,ADDRESS]…` entries that pin a name to addresses (curl's `--resolve`).
    public var resolve: [String] = []
    /// `HOST1:PORT1:HOST2:PORT2` entries: connect to the second where a URL names the first
    /// (curl's `--connect-to`).
    public var connectTo: [String] = []
    /// Which IP version names resolve to.
    public var ipVersion: IPVersion = .any
    /// Signs every request with AWS Signature Version 4 (`s3://` URLs), afresh each time: a
    /// retry, a takeover or a resume an hour later carries a signature of its own moment.
    public var s3Signer: SigV4Signer?
    /// Asks S3 for the object's checksums (`x-amz-checksum-mode: ENABLED`, signed when requests
    /// are), on requests to the origin the options are bound to; set for `s3://` objects.
    package var s3ChecksumMode = false
    /// Who may receive the secrets above; set by a download for the URL it was given
    /// (``bindSecrets(to:)``).
    package var scope = CredentialScope()

    /// IPv4, IPv6 or either (`-4`, `-6`).
    public enum IPVersion: Sendable, Equatable {
        case any, v4, v6
    }

    /// The defaults: certificates checked, 20 s to connect, 30 s of stall allowed, no proxy of its own.
    public init() {}

    /// libcurl's receive buffer per transfer (`CURLOPT_BUFFERSIZE`), bytes.
    package static let receiveBufferBytes = 64 * 1024

    /// Binds the secrets of these options to the origin of `url` (the URL the user gave, in its
    /// HTTP(S) form) and reads the netrc file once: see ``CredentialScope``.
    package mutating func bindSecrets(to url: String) throws(DownloadError) {
        if scope.origin == nil { scope.origin = URLParts(url)?.origin }
        try readNetrc()
    }

    /// Reads the netrc file, once: options copied from these (a batch's files) find it read, or
    /// found missing. `-u` wins over netrc (as in curl): then the file is not read at all.
    package mutating func readNetrc() throws(DownloadError) {
        guard netrc, credentials == nil, !scope.netrcRead, let path = netrcFile ?? Netrc.defaultPath else { return }
        scope.netrc = try Netrc.load(path: path)
        scope.netrcRead = true
        if let text = scope.netrc?.machineText, !text.isEmpty {
            scope.machineFile = Netrc.MachineFile(text: text, directory: Environment.value("TMPDIR") ?? "/tmp")
        }
    }

    /// Applies these options to `easy` for a request of `url`. Secrets go only where
    /// ``scope`` allows: a request to another origin (a mirror, a redirect target) carries
    /// neither ``credentials``, the user's `Authorization` and `Cookie` lines, an S3 signature
    /// nor a netrc `default` login.
    /// - Parameters:
    ///   - extraHeaders: lines for this request only; each replaces a user line of the same field
    ///     name (see ``headerLines(user:extra:)``).
    package func configure(_ easy: CurlEasy, url: String, extraHeaders: [String] = [], method: String = "GET") {
        let grant = scope.grant(for: url)
        let trusted = grant.userSecrets
        easy.set(CURLOPT_URL, url)
        easy.set(CURLOPT_NOSIGNAL, true)
        // A signed request is never followed: its signature and token would go along to wherever
        // the store points (an answer naming another region comes back as a 3xx to report).
        let signed = s3Signer != nil && trusted
        easy.set(CURLOPT_FOLLOWLOCATION, !signed)
        // An S3 key may hold `.` and `..` segments, which libcurl would squash: the path sent
        // must be the path signed, the object's own.
        if signed { easy.set(CURLOPT_PATH_AS_IS, true) }
        easy.set(CURLOPT_MAXREDIRS, maximumRedirects)
        // Only plain HTTP(S), also after redirects.
        easy.set(CURLOPT_PROTOCOLS_STR, SourceAddress.transferProtocols)
        easy.set(CURLOPT_REDIR_PROTOCOLS_STR, Self.redirectProtocols(url: url, netrcAtEveryHop: scope.machineFile != nil))
        easy.set(CURLOPT_USERAGENT, userAgent)
        easy.set(CURLOPT_CONNECTTIMEOUT, connectTimeoutSeconds)
        easy.set(CURLOPT_LOW_SPEED_LIMIT, stallBytesPerSecond)
        easy.set(CURLOPT_LOW_SPEED_TIME, stallTimeoutSeconds)
        // libcurl's receive buffer, one per transfer: 64 KiB keeps 16 connections' buffers at
        // 1 MiB; bigger ones measured no faster once writes are coalesced in our own buffers.
        easy.set(CURLOPT_BUFFERSIZE, RequestOptions.receiveBufferBytes)
        easy.set(CURLOPT_TCP_KEEPALIVE, true)
        let netrcLogin = grant.netrcLogin.map { "\($0.login):\($0.password)" }
        if let machineFile = scope.machineFile {
            // libcurl looks the host up at every hop it follows, as curl --netrc does.
            easy.set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
            easy.set(CURLOPT_NETRC_FILE, machineFile.path)
        }
        if let login = (trusted ? credentials : nil) ?? netrcLogin {
            easy.set(CURLOPT_USERPWD, login)
            easy.set(CURLOPT_HTTPAUTH, CCURL_AUTH_BASIC)
        }
        if insecure {
            easy.set(CURLOPT_SSL_VERIFYPEER, false)
            easy.set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let caCertificatePath { easy.set(CURLOPT_CAINFO, caCertificatePath) }
        if let caCertificateDirectory { easy.set(CURLOPT_CAPATH, caCertificateDirectory) }
        if let proxy { easy.set(CURLOPT_PROXY, proxy) }
        if let noProxy { easy.set(CURLOPT_NOPROXY, noProxy) }
        // Separate lists (libcurl's default since 7.42.1, set so it cannot change under us):
        // the proxy lines go to the proxy only, the origin's lines never on a CONNECT.
        easy.set(CURLOPT_HEADEROPT, Int(CURLHEADER_SEPARATE))
        if !proxyHeaders.isEmpty { easy.setList(CURLOPT_PROXYHEADER, proxyHeaders) }
        if !resolve.isEmpty { easy.setList(CURLOPT_RESOLVE, resolve) }
        if !connectTo.isEmpty { easy.setList(CURLOPT_CONNECT_TO, connectTo) }
        switch ipVersion {
        case .any: break
        case .v4: easy.set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V4))
        case .v6: easy.set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V6))
        }
        // Sends "Accept-Encoding: identity" unless a header line names the field (libcurl then
        // sends that line instead, never both), and turns on decoding: libcurl 7.88 decodes any
        // coding it supports that a response declares, advertised or not (measured: a gzip body
        // sent to an "identity" request arrives decoded). A body that does not decode as declared
        // fails with CURLE_BAD_CONTENT_ENCODING; encoded bytes never reach the file.
        easy.set(CURLOPT_ACCEPT_ENCODING, Self.defaultAcceptEncoding)
        easy.setHeaders(headerLines(url: url, extraHeaders: extraHeaders, method: method, time: Int(Glibc.time(nil))))
    }

    /// The header lines a request for `url` at `time` sends: the user's (without `Authorization`
    /// and `Cookie` where ``scope`` withholds secrets), `extraHeaders`, and an S3 signature
    /// only for the origin the credentials belong to.
    /// The protocols a redirect of a request for `url` may lead to. libcurl drops `-u` and
    /// the user's header lines when a redirect changes scheme, but looks netrc logins up again at
    /// every hop (`netrcAtEveryHop`): an https URL redirected to plain http would then send the
    /// login in the clear, so such a redirect is refused there
    /// (``TransferFailure/curl(_:url:detail:proxy:)`` says why).
    ///
    /// | URL     | netrc at every hop | may redirect to |
    /// |---------|--------------------|-----------------|
    /// | https   | yes                | https           |
    /// | https   | no                 | http, https     |
    /// | http    | either             | http, https     |
    package static func redirectProtocols(url: String, netrcAtEveryHop: Bool) -> String {
        netrcAtEveryHop && SourceAddress.isHTTPS(url) ? "https" : SourceAddress.transferProtocols
    }

    package func headerLines(url: String, extraHeaders: [String] = [], method: String = "GET", time: Int) -> [String] {
        let trusted = scope.grant(for: url).userSecrets
        let user = trusted ? headers : headers.filter { !Self.originBoundFields.contains(Self.fieldName($0) ?? "") }
        let s3Fields = trusted && s3ChecksumMode ? [("x-amz-checksum-mode", "ENABLED")] : []
        let signed = (trusted ? s3Signer : nil).map { $0.headerLines(method: method, url: url, time: time, signing: s3Fields) }
            ?? s3Fields.map { "\($0.0): \($0.1)" }
        return Self.headerLines(user: user, extra: extraHeaders + signed)
    }

    /// Whether a download of `url` with these options involves a secret: a password (here or in
    /// the URL), an `Authorization` or `Cookie` line, or a signed URL. Its partial file and
    /// journal are then created readable by their owner only.
    package func carriesCredentials(for url: String) -> Bool {
        credentials != nil || s3Signer != nil || Redaction.url(url) != url
            || headers.contains { Self.originBoundFields.contains(Self.fieldName($0) ?? "") }
    }

    /// What is wrong with a user's header line, or `nil`. The message never repeats the value
    /// (it may be a token): a line without a colon is shown up to its first space.
    public static func headerProblem(_ line: String) -> String? {
        if line.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) {
            return "a header line cannot contain a line break (it would send another header): \(fieldName(line).map { "'\($0)'" } ?? "a line")"
        }
        guard let colon = line.firstIndex(where: { $0 == ":" || $0 == ";" }), colon != line.startIndex,
              !line[..<colon].contains(" ") else {
            let start = line.prefix { $0 != " " }
            return "takes 'Name: value' (got '\(start)\(start.count < line.count ? " …" : "")')"
        }
        return nil
    }

    /// The proxy a request for `url` goes through, named with where it was set (`--proxy`,
    /// `https_proxy`, …), or `nil` when it goes direct. Follows libcurl's rules: the option,
    /// else `http_proxy` (lower case only) or `HTTPS_PROXY`/`https_proxy` by scheme, else
    /// `ALL_PROXY`/`all_proxy`; `--noproxy` or `NO_PROXY`/`no_proxy` (`*`, a host or a domain
    /// suffix) bypass it.
    package func proxyInUse(for url: String, environment: (String) -> String? = Environment.value) -> String? {
        guard let parts = URLParts(url) else { return nil }
        let host = parts.host.lowercased()
        let bypass = noProxy ?? environment("no_proxy") ?? environment("NO_PROXY") ?? ""
        for entry in bypass.split(separator: ",").map({ $0.trimmingCharacters().lowercased() }) where !entry.isEmpty {
            let domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            if entry == "*" || host == domain || host.hasSuffix("." + domain) { return nil }
        }
        if let proxy { return proxy.isEmpty ? nil : "\(Redaction.url(proxy)) (set in the options)" }
        let names = parts.scheme == "https" ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy"]
        for name in names + ["all_proxy", "ALL_PROXY"] {
            if let value = environment(name) { return "\(Redaction.url(value)) (from \(name))" }
        }
        return nil
    }


    /// Header fields that hold secrets for one origin.
    package static let originBoundFields: Set<String> = ["authorization", "cookie"]

    /// Whether two URLs share scheme, host and port (an unparsable one shares nothing).
    package static func sameOrigin(_ a: String, _ b: String) -> Bool {
        guard let a = URLParts(a), let b = URLParts(b) else { return false }
        return a.origin == b.origin
    }

    /// What every request says in `Accept-Encoding` unless a header line replaces it.
    package static let defaultAcceptEncoding = "identity"

    /// The header lines of one request: the user's, then `extra`, where a field `extra` sets
    /// replaces the user's lines of that field (so `Accept-Encoding` or `If-Range` is never sent
    /// twice, and a ranged request's `identity` wins over a user's coding).
    package static func headerLines(user: [String], extra: [String]) -> [String] {
        let replaced = Set(extra.compactMap(fieldName))
        return user.filter { line in fieldName(line).map { !replaced.contains($0) } ?? true } + extra
    }

    /// The lower-cased field name of a `Name: value` line (`Name;` too: libcurl's way of sending
    /// an empty value), or `nil`.
    package static func fieldName(_ line: String) -> String? {
        guard let end = line.firstIndex(where: { $0 == ":" || $0 == ";" }) else { return nil }
        let name = line[..<end].trimmingCharacters()
        return name.isEmpty ? nil : name.lowercased()
    }
}

/// The library's version.
package enum RangeFetchVersion {
    /// This build's version.
    public static let string = "0.1.0"
}
