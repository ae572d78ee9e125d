import CCurl

/// How every request of a download is made: headers, credentials, TLS and timeouts.
public struct RequestOptions: Sendable, Equatable {
    /// Extra request header lines, `Name: value`.
    public var headers: [String] = []
    /// `User-Agent` sent with every request.
    public var userAgent: String = "rangefetch/\(RangeFetchVersion.string)"
    /// `user:password` for HTTP Basic authentication (also taken from the URL's userinfo).
    public var credentials: String?
    /// Skip TLS certificate verification. Off by default; say so loudly when on.
    public var insecure = false
    /// A PEM bundle of CA certificates to trust instead of the system's.
    public var caCertificatePath: String?
    /// Seconds allowed to establish a connection.
    public var connectTimeoutSeconds: Int = 20
    /// Redirects followed at most; credentials are not sent to a different host.
    public var maximumRedirects: Int = 10
    /// A transfer that receives fewer than ``stallBytesPerSecond`` for this many seconds is
    /// aborted and retried (it never silently hangs).
    public var stallTimeoutSeconds: Int = 30
    /// See ``stallTimeoutSeconds``.
    public var stallBytesPerSecond: Int = 1
    /// Cap on the whole download's speed in bytes per second, shared across connections; `nil`: none.
    /// Enforced by the engine's ``RateLimiter`` (libcurl 7.88 ignores `CURLOPT_MAX_RECV_SPEED_LARGE`
    /// on requests that carry `CURLOPT_RANGE`, measured here).
    public var maximumBytesPerSecond: Int64?

    public init() {}

    /// Applies these options to `easy` for a request of `url`.
    func configure(_ easy: CurlEasy, url: String, extraHeaders: [String] = []) {
        easy.set(CURLOPT_URL, url)
        easy.set(CURLOPT_NOSIGNAL, true)
        easy.set(CURLOPT_FOLLOWLOCATION, true)
        easy.set(CURLOPT_MAXREDIRS, maximumRedirects)
        // Only plain HTTP(S), also after redirects.
        easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        easy.set(CURLOPT_USERAGENT, userAgent)
        easy.set(CURLOPT_CONNECTTIMEOUT, connectTimeoutSeconds)
        easy.set(CURLOPT_LOW_SPEED_LIMIT, stallBytesPerSecond)
        easy.set(CURLOPT_LOW_SPEED_TIME, stallTimeoutSeconds)
        easy.set(CURLOPT_BUFFERSIZE, 512 * 1024)
        easy.set(CURLOPT_TCP_KEEPALIVE, true)
        if let credentials {
            easy.set(CURLOPT_USERPWD, credentials)
            easy.set(CURLOPT_HTTPAUTH, CCURL_AUTH_BASIC)
        }
        if insecure {
            easy.set(CURLOPT_SSL_VERIFYPEER, false)
            easy.set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let caCertificatePath { easy.set(CURLOPT_CAINFO, caCertificatePath) }
        easy.setHeaders(headers + extraHeaders)
    }
}

public enum RangeFetchVersion {
    /// This build's version.
    public static let string = "0.1.0"
}
