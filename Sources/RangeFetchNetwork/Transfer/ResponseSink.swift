import RangeFetchBase
import CCurl

/// What a small exchange (the probe, a ``SmallGet``) collects through libcurl's callbacks: the
/// response head and, when wanted, the body up to a limit. Reached through libcurl's userdata
/// pointer, so the exchange keeps it alive until the transfer ends.
package final class ResponseSink {
    package var head = ResponseHead()
    /// The body read so far; `nil` when the body is not wanted: the write callback then stops the
    /// transfer at the body's first byte (`CURLE_WRITE_ERROR` once the head is complete).
    package fileprivate(set) var body: [UInt8]?
    fileprivate let bodyLimit: Int
    fileprivate let cancellation: CancellationFlag
    /// Asked of the complete head at the body's first byte: `false` drops the body (the
    /// transfer then stops there, as when only the head is wanted). `nil`: the body is kept.
    package var bodyWanted: ((ResponseHead) -> Bool)?

    /// - Parameter bodyLimit: keep the body, failing the transfer past this many bytes; `nil`
    ///   when only the head is wanted.
    package init(cancellation: CancellationFlag, bodyLimit: Int?) {
        self.cancellation = cancellation
        self.bodyLimit = bodyLimit ?? 0
        self.body = bodyLimit == nil ? nil : []
    }

    /// Installs the head, body and progress (cancellation) callbacks on `easy`.
    package func attach(to easy: CurlEasy) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        easy.setHeaderCallback(responseSinkHeader, userdata: userdata)
        easy.setWriteCallback(responseSinkBody, userdata: userdata)
        easy.setProgressCallback(responseSinkProgress, userdata: userdata)
    }
}

private func sink(_ userdata: UnsafeMutableRawPointer) -> ResponseSink {
    Unmanaged<ResponseSink>.fromOpaque(userdata).takeUnretainedValue()
}

private func responseSinkHeader(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let userdata else { return 0 }
    // Returning 0 aborts the transfer: a head past ResponseLimits is not read any further.
    return sink(userdata).head.consume(bytes: UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}

private func responseSinkBody(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    // Bodies of followed redirects never reach here, only the final one.
    guard let data, let userdata else { return 0 }
    let sink = sink(userdata)
    let length = size * count
    if let wanted = sink.bodyWanted {
        sink.bodyWanted = nil
        if !wanted(sink.head) { sink.body = nil }
    }
    guard !sink.cancellation.isCancelled, let kept = sink.body?.count, kept + length <= sink.bodyLimit else { return 0 }
    sink.body?.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    return length
}

private func responseSinkProgress(
    _ userdata: UnsafeMutableRawPointer?, _ dltotal: curl_off_t, _ dlnow: curl_off_t,
    _ ultotal: curl_off_t, _ ulnow: curl_off_t
) -> Int32 {
    guard let userdata else { return 0 }
    return sink(userdata).cancellation.isCancelled ? 1 : 0
}
