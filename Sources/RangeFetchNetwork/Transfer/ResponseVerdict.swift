import RangeFetchBase

/// What to do with one response to a download request, as ``ResponseValidator`` judges it from
/// its head (and, for a refusal, its error body). The engine carries the action out.
package enum ResponseVerdict: Equatable, Sendable {
    /// Use the body: it is exactly what was asked for.
    case accept
    /// Ask again (after `after` seconds when the server said so in `Retry-After`).
    case retry(DownloadError, after: Double?)
    /// A refusal (401, 403, 410, an expired-token 400) of a resolved redirect target, as an
    /// expired signed URL is refused: follow the user's URL again for a fresh one. The source's
    /// own state (``Source/refused(url:status:body:)``) still decides whether that is allowed.
    case reResolve(DownloadError, status: Int)
    /// The same refusal from the user's own URL: no fresh signature can help, so this source is
    /// done (dropped when others remain, else the download fails).
    case excludeSource(DownloadError, status: Int)
    /// The server refused for load (429, 503): fewer connections, then ask again.
    case pushback(DownloadError, after: Double?)
    /// Ranges are not honoured (a 200 to a range, an encoded body): one plain stream instead.
    case oneStream(DownloadError)
    /// The file changed on the server (validators, size, a 416): start the whole file again.
    case restartWhole(DownloadError)
    /// Nothing to retry: the download fails with this error.
    case fatal(DownloadError)
    /// The response's content does not match its `Content-Digest`: its bytes are rejected (the
    /// segment goes back to where the response began), its source is blamed, and the range is
    /// asked again, of another source when there is one. Known only once the body has ended.
    case rejectRange(DownloadError)

    /// The error that goes with any verdict but ``accept``.
    package var error: DownloadError? {
        switch self {
        case .accept: nil
        case .retry(let error, _), .reResolve(let error, _), .excludeSource(let error, _), .pushback(let error, _),
             .oneStream(let error), .restartWhole(let error), .fatal(let error), .rejectRange(let error): error
        }
    }

    /// Whether a plain try again (``retry`` or ``pushback``) answers it; the others end the
    /// download or need the engine's special handling.
    package var isRetriable: Bool {
        switch self {
        case .retry, .pushback: true
        default: false
        }
    }
}
