import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Where requests go when a signed redirect expires, and how validators from several origins are
/// judged: tables, no sockets.
struct SourceTests {
    static let user = "https://hub.example/model.bin"
    static let signed = "https://cdn.example/model.bin?sig=1"

    static func remote(etag: String? = "\"a\"", lastModified: String? = "Mon, 01 Jan 2024 00:00:00 GMT",
                       redirectedTo: String? = signed) -> RemoteFile {
        RemoteFile(url: user, redirectedTo: redirectedTo, size: 100, acceptsRanges: true, etag: etag, lastModified: lastModified,
                   suggestedName: "model.bin", advertisedDigests: [])
    }

    @Test(arguments: [
        (403, "", true), (401, "", true), (410, "", true), (404, "", false), (500, "", false),
        (400, "<Code>ExpiredToken</Code>", true), (400, "<Code>AuthenticationFailed</Code>", true),
        (400, "<Code>ExpiredRequest</Code>", true), (400, "bad request", false),
        (400, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>", true),
        // An access denial that is not about expiry, and "expired" outside any store error.
        (400, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>", false),
        (400, "<html>your session expired</html>", false),
        (400, "<Error><Code>InvalidArgument</Code><Message>Token expired at 12:00</Message></Error>", true),
    ])
    func refusalsThatMayMeanAnExpiredSignature(status: Int, body: String, expected: Bool) {
        #expect(Source.mayMeanExpiredSignature(status: status, body: body) == expected)
    }

    @Test func anExpiredTargetIsResolvedAgainThenTheFreshTargetIsUsed() {
        var source = Source(remote: Self.remote())
        #expect(source.requestURL == Self.signed)
        let refusal1 = source.refused(url: Self.signed, redirected: false, status: 403, body: "")
        #expect(refusal1 == .reResolve)
        #expect(source.requestURL == Self.user)
        // A request already under way to the old target fails too: it retries where we are now.
        let refusal2 = source.refused(url: "https://cdn.example/model.bin?sig=0", redirected: false, status: 403, body: "")
        #expect(refusal2 == .retry)
        source.answered(url: Self.user, effectiveURL: "https://cdn.example/model.bin?sig=2")
        #expect(source.requestURL == "https://cdn.example/model.bin?sig=2")
        #expect(source.resolutions == 1)
    }

    /// A fresh target that refuses too (a short-lived signature lapsed on the way, or a revoked
    /// link) is asked again within the bound; the user's URL refusing without a redirect is final.
    @Test func aFreshlyResolvedTargetThatRefusesIsAskedAgainWithinTheBound() {
        var source = Source(remote: Self.remote())
        let refusal1 = source.refused(url: Self.signed, redirected: false, status: 403, body: "")
        #expect(refusal1 == .reResolve)
        for _ in 1..<Source.maximumResolutionsWithoutProgress {
            let again = source.refused(url: Self.user, redirected: true, round: source.resolutions, status: 403, body: "")
            #expect(again == .reResolve)
        }
        let last = source.refused(url: Self.user, redirected: true, round: source.resolutions, status: 403, body: "")
        #expect(last == .fatal)
        // Requests of one round refused together count once: the others are retried.
        var together = Source(remote: Self.remote())
        _ = together.refused(url: Self.signed, redirected: false, round: 0, status: 403, body: "")
        let first = together.refused(url: Self.user, redirected: true, round: 1, status: 403, body: "")
        let second = together.refused(url: Self.user, redirected: true, round: 1, status: 403, body: "")
        #expect(first == .reResolve && second == .retry)
        #expect(together.resolutions == 2)
        var hub = Source(remote: Self.remote())
        _ = hub.refused(url: Self.signed, redirected: false, status: 403, body: "")
        let own = hub.refused(url: Self.user, redirected: false, status: 403, body: "")
        #expect(own == .fatal)
    }

    @Test func theUsersOwnURLRefusingIsFinal() {
        var source = Source(remote: Self.remote(redirectedTo: nil))
        #expect(!source.isRedirected)
        let refusal1 = source.refused(url: Self.user, redirected: false, status: 403, body: "")
        #expect(refusal1 == .fatal)
    }

    /// The probe's redirect target is where requests start, what a per-host limit counts, and
    /// what mirrors are compared with (with the user's URL, should the target have expired);
    /// without a redirect, the user's URL is all three.
    @Test func theProbesRedirectTargetIsWhereRequestsGoAndWhatMirrorsAreComparedWith() {
        let redirected = Source(remote: Self.remote())
        #expect(redirected.requestURL == Self.signed)
        #expect(redirected.origin == "https://cdn.example:443")
        #expect(redirected.referenceURLs == [Self.signed, Self.user])
        let direct = Source(remote: Self.remote(redirectedTo: nil))
        #expect(direct.requestURL == Self.user)
        #expect(direct.origin == "https://hub.example:443")
        #expect(direct.referenceURLs == [Self.user])
    }

    @Test func reResolutionsWithoutABytesBetweenAreBounded() {
        var source = Source(remote: Self.remote())
        for round in 0..<Source.maximumResolutionsWithoutProgress {
            let target = "https://cdn.example/model.bin?sig=\(round + 10)"
            if round > 0 { source.answered(url: Self.user, effectiveURL: target) }
            let refusal1 = source.refused(url: source.requestURL, redirected: false, status: 403, body: "")
            #expect(refusal1 == .reResolve)
        }
        source.answered(url: Self.user, effectiveURL: "https://cdn.example/model.bin?sig=99")
        let refusal2 = source.refused(url: source.requestURL, redirected: false, status: 403, body: "")
        #expect(refusal2 == .fatal)
        var progressing = Source(remote: Self.remote())
        for round in 0..<(2 * Source.maximumResolutionsWithoutProgress) {
            progressing.answered(url: Self.user, effectiveURL: "https://cdn.example/model.bin?sig=\(round + 10)")
            progressing.progressed()
            let refusal3 = progressing.refused(url: progressing.requestURL, redirected: false, status: 403, body: "")
            #expect(refusal3 == .reResolve)
        }
    }

    @Test(arguments: [
        // (probe ETag, probe date, response ETag, response date, identity)
        ("\"a\"", "D1", "\"a\"", "D1", Source.Identity.same),
        ("\"a\"", "D1", "\"b\"", "D1", .otherETag),
        ("\"a\"", "D1", "\"b\"", "D2", .changed),
        ("\"a\"", nil, "\"b\"", nil, .changed),
        (nil, "D1", nil, "D2", .changed),
        (nil, "D1", "\"b\"", "D1", .same),
        ("\"a\"", "D1", nil, nil, .same),
    ] as [(String?, String?, String?, String?, Source.Identity)])
    func validatorsOfAResponse(probedETag: String?, probedDate: String?, etag: String?, date: String?, expected: Source.Identity) {
        let remote = Self.remote(etag: probedETag, lastModified: probedDate)
        #expect(Source.identity(etag: etag, lastModified: date, of: remote) == expected)
    }

    @Test func disagreeingETagsSwitchIfRangeToTheDateOnce() {
        var source = Source(remote: Self.remote())
        #expect(source.ifRangeValidator == "\"a\"")
        let first = source.etagsSeenToDisagree()
        let second = source.etagsSeenToDisagree()
        #expect(first && !second)
        #expect(source.ifRangeValidator == "Mon, 01 Jan 2024 00:00:00 GMT")
    }

    /// Credentials go only to the user's origin: scheme, host (any case) and port, the
    /// scheme's default port included.
    @Test(arguments: [
        ("https://hub.example/f", "https://HUB.example:443/g", true),
        ("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b?sig=1", true),
        ("https://hub.example/f", "https://cdn.example/f", false),
        ("https://hub.example/f", "http://hub.example/f", false),
        ("http://127.0.0.1:8080/a", "http://127.0.0.1:8081/a", false),
        ("http://127.0.0.1/a", "http://localhost/a", false),
    ])
    func requestsShareAnOriginOnlyWithTheSameSchemeHostAndPort(user: String, target: String, same: Bool) {
        #expect(RequestOptions.sameOrigin(user, target) == same)
    }
}
