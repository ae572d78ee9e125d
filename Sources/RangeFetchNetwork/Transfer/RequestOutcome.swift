import RangeFetchBase
import CCurl

/// How one ended request turns out, decided once from all that is known of its end: the proof
/// of its bytes (``RangeProof``), the final verdict on its response (``ResponseVerdict``) and how
/// libcurl ended it. ``TransferEngine`` carries it out in one `switch` over ``action``.
///
/// | proof        | verdict                             | transport                         | action                  |
/// |--------------|-------------------------------------|-----------------------------------|-------------------------|
/// | `reject`     | any                                 | any                               | `reject`                |
/// | `unprovable` | any                                 | any                               | `unprovable`            |
/// | `keep`       | `reResolve`, `excludeSource`        | any                               | `refused`               |
/// | `keep`       | `pushback`                          | any                               | `pushback` (its delay)  |
/// | `keep`       | `retry`                             | any                               | `retry` (its delay)     |
/// | `keep`       | `rejectRange` (no digest check)     | any                               | `retry` at once         |
/// | `keep`       | `oneStream`, `restartWhole`, `fatal`| any                               | `fail`                  |
/// | `keep`       | `accept`, segment done              | any                               | `done`                  |
/// | `keep`       | `accept`, stream of unknown length  | OK                                | `endOfFile`             |
/// | `keep`       | `accept`                            | not retryable during a transfer   | `fail` (the short end)  |
/// | `keep`       | `accept`                            | no connect, or reset before bytes | `pushback` (short end)  |
/// | `keep`       | `accept`                            | anything else                     | `retry` (short end)     |
///
/// A kept response that failed, not fatally (a transport error other than the cut at a stolen
/// tail, or a refused response), is also a ``sourceFault``: its source may be dropped for it,
/// before the action is carried out.
package struct RequestOutcome: Equatable {
    package enum Action: Equatable {
        /// The bytes failed their proof (see ``RangeProof/reject(from:warning:error:)``).
        case reject(from: Int64, warning: DownloadWarning, error: DownloadError)
        /// The bytes from `start` can never be proven (``RangeProof/unprovable(from:)``).
        case unprovable(from: Int64)
        /// Nothing more to do: the segment's bytes are all in hand.
        case done
        /// A single stream of unknown length ended cleanly: where it ended is the file's end.
        case endOfFile
        /// A refusal (401, 403, 410, an expired-token 400): the source decides whether it may be
        /// asked again (``EngineSources/refused(_:status:error:)``).
        case refused(DownloadError, status: Int)
        /// The server refused for load: fewer connections, then ask again (after `after` seconds
        /// when it said so).
        case pushback(DownloadError, after: Double?)
        /// Ask again, after `after` seconds when the server said so, else after the backoff.
        case retry(DownloadError, after: Double?)
        /// The download fails with this error (or falls back, see ``ResponseVerdict``).
        case fail(DownloadError)
    }

    /// A failure that counts against the request's source: `why` for the source's record, and the
    /// error the range is retried with when the source is dropped for it.
    package struct SourceFault: Equatable {
        package var why: String
        package var error: DownloadError

        package init(why: String, error: DownloadError) {
            self.why = why
            self.error = error
        }
    }

    /// What is known of a request once it has ended, its proofs settled.
    package struct Facts {
        package var proof: RangeProof
        package var verdict: ResponseVerdict
        package var transport: CURLcode
        /// The write callback stopped it at its segment's end (a stolen tail): not a failure.
        package var stoppedAtSegmentEnd = false
        /// Why its response was not used, and whether that ends the download.
        package var failure: (error: DownloadError, isFatal: Bool)?
        package var receivedBytes: Int64 = 0
        /// The segment has no bytes left to fetch.
        package var segmentDone = false
        /// It was a single stream of a file of unknown length.
        package var streamOfUnknownLength = false
        /// Why it left bytes of its range unfetched (``SegmentTransfer/shortEnd(result:proxy:)``).
        package var shortEnd: DownloadError
        /// libcurl's error detail, when it gave one.
        package var transportDetail: String?
    }

    package let action: Action
    package let sourceFault: SourceFault?
    /// It ended cleanly: its source's failures in a row start again from zero.
    package let succeeded: Bool

    /// Whether the response's bytes are kept (progress is counted, the source learns from it).
    package var keepsBytes: Bool {
        switch action {
        case .reject, .unprovable: false
        default: true
        }
    }

    package init(_ end: Facts) {
        switch end.proof {
        case .reject(let start, let warning, let error):
            (action, sourceFault, succeeded) = (.reject(from: start, warning: warning, error: error), nil, false)
            return
        case .unprovable(let start):
            (action, sourceFault, succeeded) = (.unprovable(from: start), nil, false)
            return
        case .keep:
            break
        }
        let failed = (end.transport != CURLE_OK && !end.stoppedAtSegmentEnd) || end.failure != nil
        succeeded = !failed
        if failed, end.failure?.isFatal != true {
            let error = end.failure?.error ?? end.shortEnd
            sourceFault = SourceFault(why: end.failure?.error.message ?? end.transportDetail ?? end.transport.explanation,
                                      error: error.with(message: "\(error.message); its source was dropped, the range goes to another"))
        } else {
            sourceFault = nil
        }
        action = Self.action(end)
    }

    private static func action(_ end: Facts) -> Action {
        switch end.verdict {
        case .accept:
            break
        case .reResolve(let error, let status), .excludeSource(let error, let status):
            return .refused(error, status: status)
        case .pushback(let error, let after):
            return .pushback(error, after: after)
        case .retry(let error, let after):
            return .retry(error, after: after)
        case .rejectRange(let error):
            return .retry(error, after: 0)
        case .oneStream(let error), .restartWhole(let error), .fatal(let error):
            // The session falls back to one stream (rangesNotHonoured) or restarts (remoteChanged).
            return .fail(error)
        }
        if end.segmentDone { return .done }
        // Unknown length: the end of a successful body is the end of the file.
        if end.streamOfUnknownLength && end.transport == CURLE_OK { return .endOfFile }
        guard end.transport == CURLE_OK || TransferFailure.isRetryableDuringTransfer(end.transport) else { return .fail(end.shortEnd) }
        let refusedConnection = end.transport == CURLE_COULDNT_CONNECT || (end.transport == CURLE_RECV_ERROR && end.receivedBytes == 0)
        return refusedConnection ? .pushback(end.shortEnd, after: nil) : .retry(end.shortEnd, after: nil)
    }
}
