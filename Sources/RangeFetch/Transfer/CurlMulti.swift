import CCurl

/// A libcurl multi handle (`CURLM *`) driving many easy handles on one thread.
///
/// Its connection cache outlives the transfers: a probe's connection serves the download's first
/// range, and a batch worker's connections serve file after file.
/// Only ``wakeup()`` may be called from another thread (libcurl documents it as thread-safe).
///
/// One transfer, one TCP connection: HTTP/2 multiplexing is off (`CURLMOPT_PIPELINING` =
/// `CURLPIPE_NOTHING`). libcurl 7.88 multiplexes by default, which put every range of a download
/// on one h2 connection: one TCP flow, held to a CDN's per-connection cap or a lossy path's
/// window (measured: 1 GiB behind a 25 MiB/s per-connection cap took 42 s instead of 2.6 s).
/// Separate connections still speak h2 when the server offers it, one stream each.
final class CurlMulti: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    /// TLS sessions and DNS answers shared with the other handles of a download or batch.
    let share: CurlShare
    /// Sockets open through this handle's transfers, idle cached connections included.
    private let socketCount: UnsafeMutablePointer<Int>

    init(share: CurlShare = CurlShare()) {
        CurlGlobal.initialize()
        guard let handle = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        self.handle = handle
        self.share = share
        socketCount = .allocate(capacity: 1)
        socketCount.initialize(to: 0)
        ccurl_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_NOTHING))
    }

    deinit {
        // Cleaning up closes the cached connections, which count down through `socketCount`.
        curl_multi_cleanup(handle)
        socketCount.deallocate()
    }

    /// TCP connections open now through this handle: in use or idle in its cache.
    var openConnections: Int { ccurl_socket_count(socketCount) }

    func add(_ easy: CurlEasy) {
        share.attach(easy)
        ccurl_easy_count_sockets(easy.handle, socketCount)
        curl_multi_add_handle(handle, easy.handle)
    }

    func remove(_ easy: CurlEasy) {
        curl_multi_remove_handle(handle, easy.handle)
    }

    /// Lets libcurl make progress on every transfer without blocking.
    func perform() {
        var running: Int32 = 0
        curl_multi_perform(handle, &running)
    }

    /// Waits up to `timeoutMilliseconds` for socket activity or a ``wakeup()``.
    func poll(timeoutMilliseconds: Int32) {
        var ready: Int32 = 0
        curl_multi_poll(handle, nil, 0, timeoutMilliseconds, &ready)
    }

    /// Interrupts a ``poll(timeoutMilliseconds:)`` in progress; safe from any thread.
    func wakeup() {
        curl_multi_wakeup(handle)
    }

    /// The transfers that finished since the last call: each easy handle with its result.
    func completedTransfers() -> [(easy: UnsafeMutableRawPointer, result: CURLcode)] {
        var finished: [(UnsafeMutableRawPointer, CURLcode)] = []
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(handle, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            finished.append((easy, message.pointee.data.result))
        }
        return finished
    }

    /// Runs one transfer to completion on the calling thread, through this handle's connection
    /// cache; a cancelled `cancellation` aborts it with `CURLE_ABORTED_BY_CALLBACK`.
    func run(_ easy: CurlEasy, cancellation: CancellationFlag) -> CURLcode {
        cancellation.attach(self)
        defer { cancellation.detach(self) }
        add(easy)
        defer { remove(easy) }
        while true {
            perform()
            if let done = completedTransfers().first(where: { $0.easy == easy.handle }) { return done.result }
            if cancellation.isCancelled { return CURLE_ABORTED_BY_CALLBACK }
            poll(timeoutMilliseconds: 100)
        }
    }
}
