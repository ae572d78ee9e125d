import RangeFetchBase
import CCurl

/// `curl_global_init`, exactly once per process, before any handle exists.
package enum CurlGlobal {
    private static let initialized: CURLcode = curl_global_init(CCURL_GLOBAL_DEFAULT)

    /// - Throws: when libcurl could not set itself (or its TLS library) up.
    package static func initialize() throws(DownloadError) {
        let code = initialized
        guard code == CURLE_OK else {
            throw DownloadError(.transport(curlCode: Int32(code.rawValue)), "libcurl could not start: \(code.explanation)")
        }
    }

    /// libcurl could not allocate `what` (`curl_*_init` returned `NULL`).
    package static func outOfMemory(_ what: String) -> DownloadError {
        DownloadError(.transport(curlCode: Int32(CURLE_OUT_OF_MEMORY.rawValue)), "libcurl could not allocate \(what): out of memory")
    }

    /// The libcurl version string, e.g. `libcurl/7.88.1 OpenSSL/3.0.17 ...`.
    package static var version: String { String(cString: curl_version()) }
}
