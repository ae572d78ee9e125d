import CCurl

/// Turns libcurl result codes into user-facing errors.
enum TransferFailure {
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
