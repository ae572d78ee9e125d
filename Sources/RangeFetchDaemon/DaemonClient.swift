import CCurl
import FoundationEssentials

/// Calls a running daemon's JSON-RPC on loopback, as the CLI verbs (`rangefetch add`, `ls`,
/// `pause`…) do: one POST per call through libcurl, never through a proxy, with the token first.
public struct DaemonClient: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        /// No daemon answered at all (none running, or another port).
        public let unreachable: Bool
    }

    public let port: Int
    let secret: String?

    /// Seconds to connect to the daemon, and for a whole call (a pause waits for the download to
    /// stop, 10 s at most).
    static let connectTimeoutSeconds = 5
    static let callTimeoutSeconds = 30

    public init(port: Int, secret: String?) {
        self.port = port
        self.secret = secret
    }

    public var endpoint: String { "http://127.0.0.1:\(port)/jsonrpc" }

    /// `method(token, params…)`'s result, or the daemon's error message as a failure.
    public func call(_ method: String, _ params: [JSON] = []) throws(Failure) -> JSON {
        let all = (secret.map { [JSON.string("token:" + $0)] } ?? []) + params
        let body = RPCMessage.encode(["jsonrpc": .string("2.0"), "id": .string("rf"), "method": .string(method),
                                      "params": .array(all)].json)
        let (status, answer) = try post(body)
        guard let value = try? JSONDecoder().decode(JSON.self, from: Data(answer)), let object = value.object else {
            throw Failure(description: "the daemon at \(endpoint) answered HTTP \(status) with no JSON-RPC answer", unreachable: false)
        }
        if let error = object["error"]?.object {
            let message = error["message"]?.string ?? "error"
            if error["code"]?.integer == 1, message == "Unauthorized" {
                throw Failure(description: "the daemon at \(endpoint) refused the secret: pass --rpc-secret, or --state-dir of the "
                    + "daemon (its rpc-secret file is read)", unreachable: false)
            }
            throw Failure(description: message, unreachable: false)
        }
        return object["result"] ?? .null
    }

    private func post(_ body: [UInt8]) throws(Failure) -> (Int, [UInt8]) {
        guard let handle = curl_easy_init() else { throw Failure(description: "libcurl: out of memory", unreachable: false) }
        defer { curl_easy_cleanup(handle) }
        let headers: UnsafeMutablePointer<curl_slist>? = curl_slist_append(nil, "Content-Type: application/json")
        defer { curl_slist_free_all(headers) }
        let sink = Sink()
        let userdata = Unmanaged.passUnretained(sink).toOpaque()
        let written: curl_write_callback = { data, size, count, userdata in
            guard let data, let userdata else { return 0 }
            let sink = Unmanaged<Sink>.fromOpaque(userdata).takeUnretainedValue()
            let length = size * count
            guard sink.bytes.count + length <= Sink.limit else { return 0 }
            data.withMemoryRebound(to: UInt8.self, capacity: length) { sink.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
            return length
        }
        _ = ccurl_easy_setopt_string(handle, CURLOPT_URL, endpoint)
        // Loopback only: a proxy from the environment must never see the token.
        _ = ccurl_easy_setopt_string(handle, CURLOPT_NOPROXY, "*")
        _ = ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_POSTFIELDSIZE, body.count)
        let result: CURLcode = body.withUnsafeBufferPointer { buffer in
            _ = ccurl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: buffer.baseAddress))
            _ = ccurl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, written)
            _ = ccurl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, userdata)
            _ = ccurl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, Self.connectTimeoutSeconds)
            _ = ccurl_easy_setopt_long(handle, CURLOPT_TIMEOUT, Self.callTimeoutSeconds)
            _ = ccurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            return curl_easy_perform(handle)
        }
        withExtendedLifetime(sink) {}
        guard result == CURLE_OK else {
            let unreachable = result == CURLE_COULDNT_CONNECT
            let reason = String(cString: curl_easy_strerror(result))
            throw Failure(description: unreachable
                ? "no daemon answers at \(endpoint): start one with `rangefetch daemon`, or pass its --rpc-port"
                : "calling the daemon at \(endpoint): \(reason)", unreachable: unreachable)
        }
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return (status, sink.bytes)
    }

    /// The answer's bytes, gathered by libcurl's write callback (one thread: the caller's).
    private final class Sink {
        /// A `tellStopped` of a long history is a few MiB; past this the answer is refused.
        static let limit = 64 << 20
        var bytes: [UInt8] = []
    }
}
