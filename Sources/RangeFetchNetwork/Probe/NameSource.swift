import RangeFetchBase

/// Where a download's local file name comes from when its destination is a directory.
///
/// By default the name is the URL's own, as `curl -O` and wget (since CVE-2010-2252) do: a
/// server cannot choose which file lands in the directory. Whatever the source, the name is made
/// safe by `FileName.usable(_:from:)`; a name from a server never starts with a dot.
///
/// | source | `Content-Disposition` | redirect target's last segment | given URL's last segment |
/// |---|---|---|---|
/// | ``givenURL`` | ignored | ignored | used, else `FileName.fallback` |
/// | ``server`` | first choice | second choice | third choice, else `FileName.fallback` |
public enum NameSource: Sendable, Equatable {
    /// The last path segment of the URL the user gave, percent-decoded.
    case givenURL
    /// The name the server offers: `Content-Disposition`'s file name, else the last path segment
    /// of the URL the redirects ended at, else that of the given URL.
    case server

    /// The local name for a file requested as `url`, whose redirects ended at `redirectedTo`
    /// (`nil`: none), answered with `contentDisposition` (the header's value, if any).
    public func name(url: String, redirectedTo: String?, contentDisposition: String?) -> String {
        // A plain URL's name is read without libcurl's parser (a list's file is named twice).
        let given = PlainURL(url).map(Self.name) ?? Self.givenName(of: url)
        guard self == .server else { return given ?? FileName.fallback }
        var offered = [contentDisposition.flatMap(FileName.fromContentDisposition)]
        // Without a redirect (or one to the same name) the last segment is the user's own.
        let redirected = redirectedTo.flatMap(Self.lastSegment(of:))
        if let redirected, redirected != Self.lastSegment(of: url) { offered.append(redirected) }
        for case let name? in offered {
            if let usable = FileName.usable(name, from: .server) { return usable }
        }
        return given ?? FileName.fallback
    }

    /// The name a download of `url` gets before any server is asked (``givenURL``'s).
    public static func nameFromURL(_ url: String) -> String {
        if let plain = PlainURL(url) { return name(plain) }
        // An s3:// object is requested at its endpoint's URL, which ends in the key's last segment.
        if let location = SourceAddress.s3Location(url), !location.isPrefix {
            let last = location.key.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init)
            return last.flatMap { FileName.usable($0, from: .userURL) } ?? FileName.fallback
        }
        return NameSource.givenURL.name(url: url, redirectedTo: nil, contentDisposition: nil)
    }

    /// ``nameFromURL(_:)`` of a plain URL: its last segment (nothing to decode, no character
    /// to drop), unless empty, `.` or `..`, fitted to the longest name.
    package static func name(_ plain: PlainURL) -> String {
        let segment = plain.lastSegment
        return segment.isEmpty || segment == "." || segment == ".." ? FileName.fallback : FileName.fitted(segment)
    }

    private static func lastSegment(of url: String) -> String? {
        URLParts(url).flatMap { FileName.fromURLPath($0.path) }
    }

    /// The given URL's own name, made safe. A leading dot is the user's choice only when they
    /// can see it: `/.profile` keeps it, `/%2E%20.bashrc` (a dot spelt in escapes) loses it.
    private static func givenName(of url: String) -> String? {
        guard let parts = URLParts(url), let name = FileName.fromURLPath(parts.path) else { return nil }
        let visibleDot = FileName.lastRawSegment(ofPath: parts.path)?.hasPrefix(".") ?? false
        return FileName.usable(name, from: visibleDot ? .userURL : .server)
    }
}
