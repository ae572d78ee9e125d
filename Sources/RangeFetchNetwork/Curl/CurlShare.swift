import RangeFetchBase
import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// A libcurl share object (`CURLSH *`): TLS sessions and DNS answers shared by every request of a
/// download, or of a whole batch, so the second to Nth connection to a host resumes the first
/// one's TLS session instead of making a full handshake: no certificate chain to send and verify
/// and no signature to compute (TLS 1.3), and one round trip less (TLS 1.2).
///
/// `RANGEFETCH_NO_SHARE=1` turns sharing off, to measure what it saves (diagnostics only).
///
/// Thread-safe: the C shim guards each kind of shared data with its own mutex, so batch workers
/// on different threads may share one.
///
/// Sharing only saves work: when libcurl cannot set a share up (out of memory), requests simply
/// make their own handshakes and lookups.
package final class CurlShare: @unchecked Sendable {
    private let share: OpaquePointer?

    package init() {
        share = (try? CurlGlobal.initialize()) == nil ? nil : ccurl_share_create()
    }

    deinit { if let share { ccurl_share_destroy(share) } }

    /// Makes `easy` use this share (`CURLOPT_SHARE`).
    package func attach(_ easy: CurlEasy) {
        guard !Self.disabled, let share, let handle = ccurl_share_handle(share) else { return }
        easy.set(share: self, handle: handle)
    }

    private static let disabled = Environment.value("RANGEFETCH_NO_SHARE") == "1"
}
