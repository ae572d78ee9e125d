/// Keeps secrets out of what rangefetch writes or shows: a URL's password (`user:pass@host`) and
/// the values of query parameters that sign or authorise a request (S3, GCS and Azure
/// signatures, security tokens, access tokens). Journals, events, warnings and error messages
/// carry URLs only through here; requests use the real ones.
package enum Redaction {
    /// What stands in for a secret.
    public static let mask = "REDACTED"

    /// Query parameters whose values are secrets (compared without case).
    /// Signatures and tokens of the object stores and CDNs (S3, GCS, Azure SAS, CloudFront's
    /// `Policy`/`Key-Pair-Id`), OAuth's tokens and client secret, API keys (Google's `key`) and
    /// passwords, session identifiers.
    package static let secretParameters: Set<String> = [
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
        "x-goog-signature", "x-goog-credential", "signature", "sig",
        "policy", "key-pair-id",
        "token", "access_token", "refresh_token", "id_token", "x-access-token", "auth", "authorization",
        "client_secret",
        "api_key", "apikey", "api-key", "key", "secret",
        "password", "passwd", "pwd",
        "sessionid", "session_token", "session",
        // GitLab's private_token, OAuth's authorisation code, JWTs, HMAC-signed links.
        "private_token", "auth_token", "access_key", "code", "jwt", "hmac",
    ]

    /// `url` with its password and secret query values replaced by ``mask``.
    public static func url(_ url: String) -> String {
        // Nothing to redact without a login or a query (a list's URLs, each redacted several times).
        guard url.utf8.contains(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") }) else { return url }
        var text = Substring(url)
        return String(scrubURL(&text))
    }

    /// `text` with every URL in it (`scheme://...`, up to a space, quote or bracket) redacted
    /// as ``url(_:)`` does.
    public static func text(_ text: String) -> String {
        guard text.contains("://") else { return text }
        var out = ""
        var rest = Substring(text)
        while let marker = rest.firstRange(of: "://") {
            // Back up over the scheme's letters.
            var start = marker.lowerBound
            while start > rest.startIndex, let c = rest[rest.index(before: start)].asciiValue,
                  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c == 43 || c == 45 || c == 46 {
                start = rest.index(before: start)
            }
            out += rest[..<start]
            let end = rest[marker.upperBound...].firstIndex(where: { $0 == " " || $0 == "\"" || $0 == "'" || $0 == "\n"
                || $0 == "<" || $0 == ">" || $0 == ")" || $0 == "," }) ?? rest.endIndex
            // A colon or full stop that ends the URL is the sentence's ("URL: server answered").
            var urlEnd = end
            while urlEnd > marker.upperBound, [":", ".", ";"].contains(rest[rest.index(before: urlEnd)]) {
                urlEnd = rest.index(before: urlEnd)
            }
            var candidate = rest[start..<urlEnd]
            out += scrubURL(&candidate)
            rest = rest[urlEnd...]
        }
        return out + rest
    }

    private static func scrubURL(_ url: inout Substring) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return String(url) }
        let afterScheme = schemeEnd.upperBound
        let authorityEnd = url[afterScheme...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? url.endIndex
        var authority = String(url[afterScheme..<authorityEnd])
        if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
            authority = String(authority[..<colon]) + ":" + mask + String(authority[at...])
        }
        var tail = String(url[authorityEnd...])
        if let question = tail.firstIndex(of: "?") {
            let fragmentStart = tail[question...].firstIndex(of: "#") ?? tail.endIndex
            let query = tail[tail.index(after: question)..<fragmentStart]
            let redacted = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let equals = pair.firstIndex(of: "="),
                      secretParameters.contains(pair[..<equals].lowercased()) else { return String(pair) }
                return String(pair[...equals]) + mask
            }.joined(separator: "&")
            tail = String(tail[...question]) + redacted + String(tail[fragmentStart...])
        }
        return String(url[..<afterScheme]) + authority + tail
    }
}
