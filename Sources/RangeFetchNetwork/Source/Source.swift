import RangeFetchBase

/// Where a download's requests go, and what to do when that place stops answering: the URL the
/// user gave, the URL it resolved to (after redirects, possibly signed and expiring), and the
/// validator sent with `If-Range`.
///
/// A pure value on the engine thread: fed what responses said, it answers where the next request
/// goes. No sockets; tested as a table.
///
/// **Expiring redirects.** Model hubs, release assets and presigned links redirect to a signed URL
/// that expires. When the resolved URL refuses a request (401, 403, 410, or a 400 whose body says
/// the token expired) the next request goes to the user's URL again, and its redirect is followed
/// anew (aria2 does the same); once that request is answered, later ones go straight to the fresh
/// target. Responses from the fresh target pass the same checks as any (size, validators), so
/// another file behind it is caught as a changed file. Re-resolving is bounded: a refusal by the
/// user's URL itself is final, and so are more than ``maximumResolutionsWithoutProgress`` in a
/// row without a byte arriving in between (a freshly resolved target that refuses too, as a
/// revoked link's does, is asked again only that often).
///
/// **Origins that disagree.** Two origins behind one balancer may give the same bytes different
/// strong ETags. When a response's ETag differs from the probe's while the size and
/// `Last-Modified` agree, the file is judged by size and `Last-Modified` from then on: `If-Range`
/// carries the `Last-Modified` date instead of the ETag (an ETag that one origin does not know
/// would make it send the whole file). Without a `Last-Modified` to fall back on, a different
/// ETag means the file changed.
package struct Source: Sendable, Equatable {
    /// The URL the user gave: the identity of the download, and where re-resolution starts.
    package let userURL: String
    /// Where requests go now: the last resolved URL, or ``userURL`` while re-resolving.
    package private(set) var requestURL: String
    /// The validator sent with `If-Range`.
    package private(set) var ifRangeValidator: String?
    /// The probe's `Last-Modified`, the fallback validator when ETags disagree.
    private let lastModified: String?
    /// Whether responses have been seen carrying another ETag than the probe's.
    package private(set) var etagsDisagree = false
    /// Re-resolutions since a byte last arrived.
    private var resolutionsWithoutProgress = 0
    /// Re-resolutions in all, for reports.
    package private(set) var resolutions = 0

    /// A re-resolution chain that never yields a byte ends after this many tries.
    package static let maximumResolutionsWithoutProgress = 4

    package init(remote: RemoteFile) {
        userURL = remote.url
        requestURL = remote.redirectedTo ?? remote.url
        ifRangeValidator = remote.ifRangeValidator
        lastModified = remote.lastModified
    }

    /// Whether the URL in use was reached through a redirect.
    package var isRedirected: Bool { requestURL != userURL }

    /// `scheme://host:port` of the URL in use, as a per-host connection limit counts it; `nil`
    /// when libcurl cannot parse it.
    package var origin: String? { URLParts(requestURL)?.origin }

    /// The URLs whose bytes a mirror's are checked against: the URL in use, and the user's when
    /// they differ (a redirect's signed target may have expired by then).
    package var referenceURLs: [String] { isRedirected ? [requestURL, userURL] : [userURL] }

    /// What to do after a refusal that may mean an expired signature.
    package enum Refusal: Equatable {
        /// Ask the user's URL again (the next request follows its redirect anew).
        case reResolve
        /// A newer URL is already in use: retry there.
        case retry
        /// Re-resolving cannot help: the refusal stands.
        case fatal
    }

    /// A request to `url` was refused with `status` (its body, if any, in `body`); `redirected`:
    /// the refusal came from where `url` redirected to; `round`: ``resolutions`` when it started.
    package mutating func refused(url: String, redirected: Bool, round: Int = 0, status: Int, body: String) -> Refusal {
        guard Self.mayMeanExpiredSignature(status: status, body: body) else { return .fatal }
        if resolutionsWithoutProgress >= Self.maximumResolutionsWithoutProgress { return .fatal }
        if url == userURL {
            // The user's own URL refused us (no redirect involved): a fresh signature would be
            // refused the same way.
            guard redirected else { return .fatal }
            // Resolved before the latest re-resolution (requests refused together count once).
            if round < resolutions { return .retry }
            // A target it had just resolved to did: a short-lived signature may have lapsed on
            // the way (0.15 s ones did on a loaded machine), so it is asked again, within the bound.
            resolutions += 1
            resolutionsWithoutProgress += 1
            return .reResolve
        }
        if url != requestURL { return .retry }
        requestURL = userURL
        resolutions += 1
        resolutionsWithoutProgress += 1
        return .reResolve
    }

    /// A request to `url` was answered well, and after redirects came from `effectiveURL`.
    package mutating func answered(url: String, effectiveURL: String?) {
        if url == userURL, requestURL == userURL, let effectiveURL { requestURL = effectiveURL }
    }

    /// Bytes arrived since the last re-resolution.
    package mutating func progressed() { resolutionsWithoutProgress = 0 }

    /// How a response's validators compare with the probe's.
    package enum Identity: Equatable {
        case same
        /// Another ETag, the same `Last-Modified`: another origin's tag for the same file.
        case otherETag
        case changed
    }

    /// Compares a response's `ETag` and `Last-Modified` with the probe's (`remote`).
    package static func identity(etag: String?, lastModified: String?, of remote: RemoteFile) -> Identity {
        if let probed = remote.etag, let etag, etag != probed {
            guard let probedDate = remote.lastModified, lastModified == probedDate else { return .changed }
            return .otherETag
        }
        if remote.etag == nil, let probedDate = remote.lastModified, let lastModified, lastModified != probedDate {
            return .changed
        }
        return .same
    }

    /// A response carried another ETag for the same file (``Identity/otherETag``): from now on
    /// `If-Range` carries the `Last-Modified` date.
    /// - Returns: `true` the first time (to say so once).
    package mutating func etagsSeenToDisagree() -> Bool {
        guard !etagsDisagree, let lastModified else { return false }
        etagsDisagree = true
        ifRangeValidator = lastModified
        return true
    }

    /// 401, 403 and 410 from a signed URL mean it expired; a 400 only with a store error body
    /// that says so (``StoreError/saysExpired``).
    package static func mayMeanExpiredSignature(status: Int, body: String) -> Bool {
        switch status {
        case 401, 403, 410: return true
        case 400: return StoreError(body: body)?.saysExpired ?? false
        default: return false
        }
    }
}
