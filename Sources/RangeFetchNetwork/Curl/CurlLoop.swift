import RangeFetchBase
import CCurl
import Synchronization

/// The code whose requests a ``CurlLoop`` drives: a download's engine, the bench, one small
/// request. The loop calls it on its own thread, round after round, until it says ``CurlLoop/Next/done``.
package protocol CurlLoopClient: AnyObject {
    /// Before libcurl moves data this round: what is due by the clock (start, split or pause
    /// requests, give up slow ones).
    func beforeTransfers(now: Double) throws(DownloadError)
    /// After libcurl moved what it could: `finished` are the requests that ended this round,
    /// already out of the loop. Returns whether to stop, or how long to wait for sockets.
    func afterTransfers(finished: [CurlLoop.Finished], now: Double) throws(DownloadError) -> CurlLoop.Next
}

extension CurlLoopClient {
    package func beforeTransfers(now: Double) throws(DownloadError) {}
}

/// The one place that drives libcurl's multi interface (`CURLM *`): it owns the multi handle, the
/// easy handles added to it and their removal, and waits on their sockets. One per thread; every
/// request of a download, a batch worker, the probe and the bench runs on one.
///
/// Its connection cache outlives the requests: a probe's connection serves the download's first
/// range, and a batch worker's connections serve file after file.
/// Only ``wakeup()`` may be called from another thread (libcurl documents it as thread-safe).
///
/// How its requests share connections is its ``TransportPolicy``'s.
package final class CurlLoop: CancellationWaker, @unchecked Sendable {
    /// A request that ended: the token it was added with, and libcurl's result.
    package struct Finished {
        package let token: Int
        package let result: CURLcode
        /// Whether the connection of a successful request saw packets arrive out of order (losses
        /// on the path); `nil` when unknown or failed. Asked while the connection is still known to
        /// the handle, before the request leaves the loop.
        package let connectionSawLoss: Bool?

        package init(token: Int, result: CURLcode, connectionSawLoss: Bool?) {
            self.token = token
            self.result = result
            self.connectionSawLoss = connectionSawLoss
        }
    }

    /// What a client wants after a round.
    package enum Next: Equatable {
        /// Stop: ``run(_:cancellation:)`` returns.
        case done
        /// Wait at most this long for socket activity or a ``wakeup()``, then go on.
        case wait(milliseconds: Int32)
    }

    /// The multi handle: replaced only by ``closeIdleConnections()``, on the loop's thread.
    private var handle: UnsafeMutableRawPointer
    /// The handle ``wakeup()`` wakes, read and replaced under its lock: a handle is cleaned up
    /// only once no other thread can be waking it.
    private let wakeTarget: Mutex<MultiHandle>
    private struct MultiHandle: @unchecked Sendable { let pointer: UnsafeMutableRawPointer }
    /// TLS sessions and DNS answers shared with the other loops of a download or batch.
    package let share: CurlShare
    /// Sockets open through this handle's transfers, idle cached connections included.
    private let sockets: OpaquePointer
    /// The requests in the multi handle, by their easy handle: the loop holds them until they
    /// finish or are removed, and removes any left before it goes.
    private var requests: [UnsafeMutableRawPointer: (token: Int, easy: CurlEasy)] = [:]
    private let policy: TransportPolicy
    /// Whether ``Finished/connectionSawLoss`` is asked of the kernel (a system call per request);
    /// a client that never reads it (a batch's lane of small files) turns it off.
    package var readsConnectionLoss = true

    /// - Throws: when libcurl cannot start or allocate the handle.
    package init(share: CurlShare = CurlShare(), policy: TransportPolicy = .separateConnections) throws(DownloadError) {
        try CurlGlobal.initialize()
        let handle = try Self.multi(policy)
        guard let sockets = ccurl_sockets_create() else {
            curl_multi_cleanup(handle)
            throw CurlGlobal.outOfMemory("a transfer loop")
        }
        self.handle = handle
        wakeTarget = Mutex(MultiHandle(pointer: handle))
        self.share = share
        self.sockets = sockets
        self.policy = policy
    }

    /// A new multi handle set up for `policy`.
    private static func multi(_ policy: TransportPolicy) throws(DownloadError) -> UnsafeMutableRawPointer {
        guard let handle = curl_multi_init() else { throw CurlGlobal.outOfMemory("a transfer loop") }
        let code = ccurl_multi_setopt_long(handle, CURLMOPT_PIPELINING, policy.pipelining)
        guard code == CURLM_OK else {
            curl_multi_cleanup(handle)
            throw Self.failure(code, "setting up a transfer loop")
        }
        return handle
    }

    deinit {
        for request in requests.values { curl_multi_remove_handle(handle, request.easy.handle) }
        // Handles nobody else holds go now, while the share they use is surely alive.
        requests.removeAll()
        // Cleaning up closes the cached connections, which count down through `sockets`.
        curl_multi_cleanup(handle)
        ccurl_sockets_destroy(sockets)
    }

    /// TCP connections open now through this handle: in use or idle in its cache.
    package var openConnections: Int { ccurl_sockets_count(sockets) }

    /// Bytes that reached the connection of `easy`'s request and are not read yet (the kernel's
    /// receive queue): already sent by the server, so a cut below them wastes them; with the
    /// connection's receive space (`tcpi_rcv_space`), which tells a queue at our window's limit
    /// (the server then holds more). `nil` when unknown. On the loop's thread only.
    package func unreadBytes(of easy: CurlEasy) -> CutWaste.Unread? {
        var space: Int64 = -1
        let bytes = ccurl_easy_unread_bytes(easy.handle, sockets, &space)
        return bytes < 0 ? nil : CutWaste.Unread(bytes: Int64(bytes), receiveSpace: space < 0 ? nil : space)
    }

    /// Requests in the loop now.
    package var requestCount: Int { requests.count }

    /// Starts `easy` on this loop; its end is reported under `token`.
    /// - Throws: when an option of `easy` was refused, or libcurl would not take it.
    package func add(_ easy: CurlEasy, token: Int) throws(DownloadError) {
        // Two requests under one token would end as each other: a client's mistake, refused.
        guard requests[easy.handle] == nil, !requests.values.contains(where: { $0.token == token }) else {
            throw DownloadError(.invalidOption, "internal error: request \(token) is already on this transfer loop")
        }
        share.attach(easy)
        if policy.waitsToShare(easy.effectiveURL) { easy.set(CURLOPT_PIPEWAIT, true) }
        if let refusal = easy.refusal { throw refusal }
        let counting = ccurl_easy_track_sockets(easy.handle, sockets)
        guard counting == CURLE_OK else { throw CurlEasy.refusal(of: CURLOPT_OPENSOCKETFUNCTION, counting) }
        let code = curl_multi_add_handle(handle, easy.handle)
        guard code == CURLM_OK else { throw Self.failure(code, "starting a request") }
        requests[easy.handle] = (token, easy)
    }

    /// Takes `easy` out of the loop mid-flight (libcurl closes its connection); nothing when it
    /// is not in the loop.
    package func remove(_ easy: CurlEasy) {
        guard requests.removeValue(forKey: easy.handle) != nil else { return }
        curl_multi_remove_handle(handle, easy.handle)
    }

    /// Interrupts a wait in progress; safe from any thread.
    package func wakeup() {
        wakeTarget.withLock { _ = curl_multi_wakeup($0.pointer) }
    }

    /// Closes the connections idle in the cache, so that they hold no place in a connection
    /// budget while this loop has nothing to run (libcurl has no call for it: the multi handle is
    /// replaced by a new one, and the old one cleaned up). TLS sessions and DNS answers stay in
    /// the ``share``. `false`, nothing changed, while a request is in the loop or when no new
    /// handle could be made. On the loop's thread, between rounds.
    package func closeIdleConnections() -> Bool {
        guard requests.isEmpty, let fresh = try? Self.multi(policy) else { return false }
        let old = handle
        wakeTarget.withLock { $0 = MultiHandle(pointer: fresh) }
        handle = fresh
        curl_multi_cleanup(old)
        // A wakeup sent to the old handle since the last wait is not lost.
        curl_multi_wakeup(fresh)
        return true
    }

    /// Drives the requests until `client` says ``Next/done``; a cancelled `cancellation` ends it
    /// with ``DownloadError/cancelled()``. Requests still in the loop then stay in it: the client
    /// removes them (keeping what they received) or the loop does when it goes.
    package func run(_ client: CurlLoopClient, cancellation: CancellationFlag) throws(DownloadError) {
        cancellation.attach(self)
        defer { cancellation.detach(self) }
        while true {
            if cancellation.isCancelled { throw .cancelled() }
            try client.beforeTransfers(now: MonotonicTime.now())
            var running: Int32 = 0
            curl_multi_perform(handle, &running)
            switch try client.afterTransfers(finished: takeFinished(), now: MonotonicTime.now()) {
            case .done:
                return
            case .wait(let milliseconds):
                var ready: Int32 = 0
                curl_multi_poll(handle, nil, 0, milliseconds, &ready)
            }
        }
    }

    /// Runs one request to completion on the calling thread, through this loop's connection
    /// cache; a cancelled `cancellation` aborts it with `CURLE_ABORTED_BY_CALLBACK`.
    /// - Throws: when the request cannot start (see ``add(_:token:)``).
    package func perform(_ easy: CurlEasy, cancellation: CancellationFlag) throws(DownloadError) -> CURLcode {
        let single = SingleRequest()
        try add(easy, token: SingleRequest.token)
        defer { remove(easy) }
        do {
            try run(single, cancellation: cancellation)
        } catch {
            return CURLE_ABORTED_BY_CALLBACK
        }
        return single.result ?? CURLE_ABORTED_BY_CALLBACK
    }

    /// The requests that ended since the last call, taken out of the loop.
    private func takeFinished() -> [Finished] {
        var finished: [Finished] = []
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(handle, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                  let request = requests.removeValue(forKey: easy) else { continue }
            let result = message.pointee.data.result
            let sawLoss = result == CURLE_OK && readsConnectionLoss ? request.easy.lastConnectionSawLoss : nil
            curl_multi_remove_handle(handle, easy)
            finished.append(Finished(token: request.token, result: result, connectionSawLoss: sawLoss))
        }
        return finished
    }

    private static func failure(_ code: CURLMcode, _ doing: String) -> DownloadError {
        DownloadError(.transport(curlCode: Int32(CURLE_FAILED_INIT.rawValue)),
                      "libcurl failed \(doing): \(String(cString: curl_multi_strerror(code)))")
    }
}

/// One request run alone (``CurlLoop/perform(_:cancellation:)``): done when it ends.
private final class SingleRequest: CurlLoopClient {
    /// Its token: no other client's (theirs are not negative).
    static let token = -1
    var result: CURLcode?

    func afterTransfers(finished: [CurlLoop.Finished], now: Double) -> CurlLoop.Next {
        if let mine = finished.first(where: { $0.token == Self.token }) { result = mine.result }
        return result == nil ? .wait(milliseconds: 100) : .done
    }
}
