import RangeFetchBase
import CCurl

/// One libcurl easy handle (`CURL *`): a single request and its options.
///
/// Not thread-safe: create, configure and perform it on one thread (the engine's or the probe's).
package final class CurlEasy {
    package let handle: UnsafeMutableRawPointer
    /// libcurl keeps a pointer to each list (headers, `--resolve`, `--connect-to`) until the
    /// handle is done with it.
    private var lists: [UInt32: UnsafeMutablePointer<curl_slist>] = [:]
    /// `CURLOPT_ERRORBUFFER`: libcurl's own sentence about the last failure (`CURL_ERROR_SIZE`,
    /// 256 bytes), e.g. "Too large response headers: 307979 > 307200".
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// The first option libcurl refused on this handle (an unknown option, a value out of
    /// range, out of memory): ``CurlLoop`` will not start a request configured wrongly.
    package private(set) var refusedOption: (option: UInt32, code: CURLcode)?

    /// - Throws: when libcurl cannot allocate a handle.
    package init() throws(DownloadError) {
        try CurlGlobal.initialize()
        guard let handle = curl_easy_init() else { throw CurlGlobal.outOfMemory("a request handle") }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        check(ccurl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), CURLOPT_ERRORBUFFER)
    }

    deinit {
        curl_easy_cleanup(handle)
        for list in lists.values { curl_slist_free_all(list) }
        errorBuffer.deallocate()
    }

    /// libcurl's description of the last failure on this handle, when it wrote one.
    package var errorDetail: String? {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? nil : text
    }

    /// Keeps the first refusal (``refusedOption``); later options are still set, so one refused
    /// option is reported rather than a confusing failure of another.
    private func check(_ code: CURLcode, _ option: CURLoption) {
        if code != CURLE_OK && refusedOption == nil { refusedOption = (option.rawValue, code) }
    }

    /// Why the request cannot start: the option libcurl refused, in its own words.
    package var refusal: DownloadError? {
        guard let (option, code) = refusedOption else { return nil }
        return Self.refusal(of: CURLoption(rawValue: option), code)
    }

    /// A refused option is no network failure to retry: this libcurl does not take what was asked
    /// (out of memory aside).
    package static func refusal(of option: CURLoption, _ code: CURLcode) -> DownloadError {
        let message = "libcurl refused request option \(option.rawValue): \(code.explanation) (libcurl \(CurlGlobal.version))"
        if code == CURLE_OUT_OF_MEMORY { return DownloadError(.transport(curlCode: Int32(code.rawValue)), message) }
        return DownloadError(.invalidOption, message)
    }

    package func set(_ option: CURLoption, _ value: Int) {
        check(ccurl_easy_setopt_long(handle, option, value), option)
    }

    package func set(_ option: CURLoption, _ value: Bool) {
        check(ccurl_easy_setopt_long(handle, option, value ? 1 : 0), option)
    }

    /// libcurl copies string options, so `value` need not outlive the call.
    package func set(_ option: CURLoption, _ value: String) {
        check(ccurl_easy_setopt_string(handle, option, value), option)
    }

    package func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) {
        check(ccurl_easy_setopt_pointer(handle, option, pointer), option)
    }

    package func setWriteCallback(_ callback: curl_write_callback, userdata: UnsafeMutableRawPointer) {
        check(ccurl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, callback), CURLOPT_WRITEFUNCTION)
        set(CURLOPT_WRITEDATA, pointer: userdata)
    }

    package func setHeaderCallback(_ callback: curl_write_callback, userdata: UnsafeMutableRawPointer) {
        check(ccurl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, callback), CURLOPT_HEADERFUNCTION)
        set(CURLOPT_HEADERDATA, pointer: userdata)
    }

    package func setProgressCallback(_ callback: curl_xferinfo_callback, userdata: UnsafeMutableRawPointer) {
        check(ccurl_easy_setopt_xferinfo_callback(handle, callback), CURLOPT_XFERINFOFUNCTION)
        set(CURLOPT_XFERINFODATA, pointer: userdata)
        set(CURLOPT_NOPROGRESS, false)
    }

    /// The share this request uses, kept alive as long as the handle: libcurl locks it until
    /// the handle is cleaned up.
    private var share: CurlShare?

    /// Makes this request use `share`'s TLS sessions and DNS answers (`CURLOPT_SHARE`).
    package func set(share: CurlShare, handle shared: UnsafeMutableRawPointer) {
        guard self.share !== share else { return }
        check(ccurl_easy_setopt_share(handle, shared), CURLOPT_SHARE)
        self.share = share
    }

    /// Replaces the request's extra header lines (`Name: value`).
    package func setHeaders(_ lines: [String]) {
        setList(CURLOPT_HTTPHEADER, lines)
    }

    /// Replaces a string-list option (`CURLOPT_HTTPHEADER`, `CURLOPT_RESOLVE`, `CURLOPT_CONNECT_TO`).
    package func setList(_ option: CURLoption, _ lines: [String]) {
        let old = lists[option.rawValue]
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let longer = curl_slist_append(list, line) else {
                check(CURLE_OUT_OF_MEMORY, option)
                break
            }
            list = longer
        }
        check(ccurl_easy_setopt_slist(handle, option, list), option)
        lists[option.rawValue] = list
        if let old { curl_slist_free_all(old) }
    }

    /// Resumes a transfer paused from its write callback (`curl_easy_pause(CURLPAUSE_CONT)`);
    /// libcurl may deliver the held data before this returns.
    package func resume() {
        curl_easy_pause(handle, CURLPAUSE_CONT)
    }

    /// Runs the request to completion on the calling thread (`curl_easy_perform`).
    package func perform() -> CURLcode {
        curl_easy_perform(handle)
    }

    /// The last response's status code (0 when none arrived).
    package var responseCode: Int {
        var code = 0
        ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    /// Whether the connection of the last finished request (still open in the multi handle's
    /// cache) saw packets arrive out of order, i.e. losses on the path; `nil` when unknown.
    package var lastConnectionSawLoss: Bool? {
        guard let socket = activeSocket else { return nil }
        let packets = ccurl_tcp_out_of_order_packets(socket)
        return packets < 0 ? nil : packets > 0
    }

    /// Body bytes received so far as they came over the wire, before any content decoding
    /// (`CURLINFO_SIZE_DOWNLOAD_T`).
    package var receivedBodyBytes: Int64 {
        var bytes = curl_off_t(0)
        ccurl_easy_getinfo_offset(handle, CURLINFO_SIZE_DOWNLOAD_T, &bytes)
        return Int64(bytes)
    }

    /// The HTTP version of the last response, as `h1.0`, `h1.1`, `h2` or `h3`; `nil` before one.
    package var httpVersion: String? {
        var version = 0
        guard ccurl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version) == CURLE_OK else { return nil }
        switch version {
        case Int(CURL_HTTP_VERSION_1_0): return "h1.0"
        case Int(CURL_HTTP_VERSION_1_1): return "h1.1"
        case Int(CURL_HTTP_VERSION_2_0): return "h2"
        case Int(CURL_HTTP_VERSION_3): return "h3"
        default: return nil
        }
    }

    /// How the last request's connection came about: whether it opened a new one (else it reused
    /// one from the cache), the seconds its set-up took (TCP connect, plus the TLS handshake over
    /// HTTPS; 0 when reused) and the seconds until the response's first byte (from libcurl's
    /// timers, counted from the request's start, redirects excluded).
    package var connectionTimings: (newConnection: Bool, setupSeconds: Double, firstByteSeconds: Double) {
        var connects = 0, connect = curl_off_t(0), tls = curl_off_t(0), firstByte = curl_off_t(0)
        ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        ccurl_easy_getinfo_offset(handle, CURLINFO_CONNECT_TIME_T, &connect)
        ccurl_easy_getinfo_offset(handle, CURLINFO_APPCONNECT_TIME_T, &tls)
        ccurl_easy_getinfo_offset(handle, CURLINFO_STARTTRANSFER_TIME_T, &firstByte)
        let setup = connects > 0 ? Double(max(connect, tls)) / 1e6 : 0
        return (connects > 0, setup, Double(firstByte) / 1e6)
    }

    /// The socket of the connection this request used last (`CURLINFO_ACTIVESOCKET`: libcurl 7.88
    /// knows it once the request is done and its connection is back in the cache).
    package var activeSocket: Int32? {
        var socket = curl_socket_t(-1)
        guard ccurl_easy_getinfo_socket(handle, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK, socket >= 0 else { return nil }
        return socket
    }

    /// Redirects the last request followed (`CURLINFO_REDIRECT_COUNT`).
    package var redirectCount: Int {
        var count = 0
        ccurl_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &count)
        return count
    }

    /// The URL of the last request, after redirects.
    package var effectiveURL: String? {
        var pointer: UnsafeMutablePointer<CChar>?
        ccurl_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &pointer)
        return pointer.map { String(cString: $0) }
    }
}

extension CURLcode {
    /// libcurl's own one-line explanation of the code.
    package var explanation: String { String(cString: curl_easy_strerror(self)) }
}
