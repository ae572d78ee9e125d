import CCurl

/// Turns libcurl result codes into user-facing errors.
enum TransferFailure {
    /// Once the probe has reached the server, most transport failures of a range request are
    /// worth a retry on a fresh connection (resets, timeouts, garbage left on a reused
    /// connection by a misbehaving server). These are not: they would fail the same way again.
    static func isRetryableDuringTransfer(_ code: CURLcode) -> Bool {
        ![CURLE_OUT_OF_MEMORY, CURLE_TOO_MANY_REDIRECTS, CURLE_PEER_FAILED_VERIFICATION,
          CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM].contains(code)
    }

    static func curl(_ code: CURLcode, url: String, detail: String?) -> DownloadError {
        let raw = Int32(code.rawValue)
        var message = "\(url): \(code.explanation)"
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST: message = "\(url): could not resolve host"
        case CURLE_COULDNT_CONNECT: message = "\(url): could not connect (is the server up?)"
        case CURLE_OPERATION_TIMEDOUT: message = "\(url): timed out (no data for too long)"
        case CURLE_TOO_MANY_REDIRECTS: message = "\(url): too many redirects"
        case CURLE_PEER_FAILED_VERIFICATION:
            message = "\(url): TLS certificate not trusted (use --cacert FILE, or --insecure at your own risk)"
        case CURLE_UNSUPPORTED_PROTOCOL: message = "\(url): unsupported protocol (only http and https)"
        default: break
        }
        if let detail, !detail.isEmpty { message += " (\(detail))" }
        return DownloadError(.transport(curlCode: raw), message)
    }
}
