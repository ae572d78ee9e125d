import RangeFetchBase
import CCurl

/// A URL checked and split by libcurl's own parser (`curl_url`), so we accept exactly what the
/// transfer will.
package struct URLParts: Sendable, Equatable {
    /// The scheme, lower case (`http`, `https`).
    public var scheme: String
    /// The host name or address.
    public var host: String
    /// The path, still percent-encoded (`/` when empty).
    public var path: String
    /// What follows `?`, as given (still percent-encoded); `nil` without one.
    public var query: String?
    /// The user name of the URL's userinfo, decoded.
    public var user: String?
    /// The password of the URL's userinfo, decoded.
    public var password: String?
    /// The port, the scheme's default where the URL names none.
    public var port: Int

    /// `scheme://host:port`: requests to one origin may carry the credentials given for it.
    public var origin: String { "\(scheme)://\(host.lowercased()):\(port)" }

    /// The parts given.
    package init(scheme: String, host: String, path: String, query: String?, user: String?, password: String?, port: Int) {
        self.scheme = scheme
        self.host = host
        self.path = path
        self.query = query
        self.user = user
        self.password = password
        self.port = port
    }

    /// Parses `text`; `nil` when libcurl cannot. A plain URL (`PlainURL`) is split without
    /// libcurl, as libcurl splits it.
    public init?(_ text: String) {
        if let plain = PlainURL(text) {
            self = plain.parts
            return
        }
        self.init(parsedByCurl: text)
    }

    /// Parses `text` with libcurl; `nil` when libcurl cannot.
    package init?(parsedByCurl text: String) {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        // The path as written, dot segments kept: an S3 key's path is signed as it is sent.
        guard curl_url_set(handle, CURLUPART_URL, text, UInt32(CURLU_PATH_AS_IS)) == CURLUE_OK else { return nil }
        func part(_ which: CURLUPart, flags: UInt32 = 0) -> String? {
            var pointer: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, which, &pointer, flags) == CURLUE_OK, let pointer else { return nil }
            defer { curl_free(pointer) }
            return String(cString: pointer)
        }
        guard let scheme = part(CURLUPART_SCHEME), let host = part(CURLUPART_HOST) else { return nil }
        self.scheme = scheme.lowercased()
        self.host = host
        self.path = part(CURLUPART_PATH) ?? "/"
        self.query = part(CURLUPART_QUERY)
        self.user = part(CURLUPART_USER).flatMap { FileName.percentDecode($0) }
        self.password = part(CURLUPART_PASSWORD).flatMap { FileName.percentDecode($0) }
        self.port = part(CURLUPART_PORT, flags: UInt32(CURLU_DEFAULT_PORT)).flatMap { Int($0) } ?? 0
    }
}
