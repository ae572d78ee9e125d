import RangeFetchBase
import CCurl

/// Turns libcurl result codes into user-facing errors.
package enum TransferFailure {
    /// Once the probe has reached the server, most transport failures of a range request are
    /// worth a retry on a fresh connection (resets, timeouts, garbage left on a reused
    /// connection by a misbehaving server). These are not: they would fail the same way again.
    package static func isRetryableDuringTransfer(_ code: CURLcode) -> Bool {
        ![CURLE_OUT_OF_MEMORY, CURLE_TOO_MANY_REDIRECTS, CURLE_PEER_FAILED_VERIFICATION,
          CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_BAD_CONTENT_ENCODING].contains(code)
    }

    /// A libcurl failure that means the server's response head was unacceptable, as a clear
    /// non-transient error, or `nil` for other failures. libcurl 7.88.1 (measured) fails a header
    /// line over 100 KiB with `CURLE_OUT_OF_MEMORY` and no message, more than 300 KiB of headers
    /// with `CURLE_RECV_ERROR` "Too large response headers: …", and a negative or non-numeric
    /// `Content-Length` with `CURLE_WEIRD_SERVER_REPLY` "Invalid Content-Length: value" (that line
    /// never reaches the header callback).
    /// - Parameters:
    ///   - head: what the header callback collected before the failure.
    ///   - detail: libcurl's error buffer (``CurlEasy/errorDetail``).
    package static func responseHead(_ code: CURLcode, head: ResponseHead, detail: String?, url: String) -> DownloadError? {
        if let malformed = head.malformation(url: url) { return malformed }
        let detail = detail ?? ""
        switch code {
        case CURLE_OUT_OF_MEMORY where head.status != 0 && !head.isComplete:
            return DownloadError(.protocolViolation, "\(url): server sent a response header line over 100 KiB (libcurl's limit); refusing the response", url: url)
        case CURLE_RECV_ERROR where detail.hasPrefix("Too large response headers"):
            return DownloadError(.protocolViolation, "\(url): server sent response headers over libcurl's 300 KiB limit (\(detail))", url: url)
        case CURLE_WEIRD_SERVER_REPLY where detail.contains("Content-Length"):
            return DownloadError(.protocolViolation, "\(url): server sent an unusable Content-Length (negative or not a number; libcurl: \(detail))", url: url)
        default:
            return nil
        }
    }

    /// - Parameter proxy: the proxy the request went through, as ``RequestOptions/proxyInUse(for:)``
    ///   describes it: connection failures then name it, not the server.
    package static func curl(_ code: CURLcode, url: String, detail: String?, proxy: String? = nil) -> DownloadError {
        let raw = Int32(code.rawValue)
        var message = "\(url): \(code.explanation)"
        var remedy: DownloadError.Remedy?
        switch code {
        case CURLE_COULDNT_RESOLVE_PROXY:
            message = "\(url): could not resolve the host of the proxy \(proxy ?? "")"
        case CURLE_COULDNT_CONNECT where proxy != nil:
            message = "\(url): could not connect to the proxy \(proxy ?? "")"
            remedy = .fixProxy
        case CURLE_COULDNT_RESOLVE_HOST: message = "\(url): could not resolve host"
        case CURLE_COULDNT_CONNECT: message = "\(url): could not connect (is the server up?)"
        case CURLE_OPERATION_TIMEDOUT: message = "\(url): timed out (no data for too long)"
        case CURLE_TOO_MANY_REDIRECTS: message = "\(url): too many redirects"
        case CURLE_PEER_FAILED_VERIFICATION:
            message = "\(url): TLS certificate not trusted"
            remedy = .trustCertificate
        case CURLE_UNSUPPORTED_PROTOCOL where SourceAddress.isHTTPS(url) && (detail ?? "").contains("\"http\""):
            message = "\(url): redirected to plain http, which is refused: a netrc login would go there in the clear (use --no-netrc to follow it without the login)"
        case CURLE_UNSUPPORTED_PROTOCOL: message = "\(url): unsupported protocol (only http and https)"
        case CURLE_BAD_CONTENT_ENCODING:
            message = "\(url): the body does not decode as its Content-Encoding says (corrupt, or a coding libcurl cannot decode); nothing encoded is saved"
        default: break
        }
        if let detail, !detail.isEmpty { message += " (\(detail))" }
        return DownloadError(.transport(curlCode: raw), message, url: url, remedy: remedy)
    }
}
