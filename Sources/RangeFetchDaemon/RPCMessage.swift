import FoundationEssentials

/// One JSON-RPC 2.0 call as aria2's clients send it: `jsonrpc` as the string "2.0" or the number
/// 2.0 (webui-aria2), an `id` of any JSON shape echoed back, `params` an array (or absent).
struct RPCCall: Sendable, Equatable {
    var id: JSON
    var method: String
    var params: [JSON]
}

/// A failure answered in a call's `error` member. aria2 answers its own errors with code 1.
struct RPCFailure: Error, Sendable, Equatable, CustomStringConvertible {
    var code: Int
    var message: String

    init(_ message: String, code: Int = 1) {
        self.code = code
        self.message = message
    }

    static let unauthorized = RPCFailure("Unauthorized")

    var description: String { message }
}

/// A request body: one call or a batch (an array), each element parsed on its own so one bad
/// element does not spoil the others. Pure.
enum RPCMessage {
    /// A parsed element: a call, or the failure to answer in its place (with the id, if any).
    typealias Element = Result<RPCCall, RPCElementFailure>

    struct RPCElementFailure: Error, Sendable, Equatable {
        var id: JSON
        var failure: RPCFailure
    }

    /// The body's calls; `batch` when it was an array. A body that is not JSON at all is one
    /// parse error (-32700).
    static func parse(_ body: [UInt8]) -> (elements: [Element], batch: Bool) {
        guard let value = try? JSONDecoder().decode(JSON.self, from: Data(body)) else {
            return ([.failure(RPCElementFailure(id: .null, failure: RPCFailure("Parse error.", code: -32700)))], false)
        }
        if case .array(let items) = value {
            guard !items.isEmpty else {
                return ([.failure(RPCElementFailure(id: .null, failure: RPCFailure("Invalid Request.", code: -32600)))], false)
            }
            return (items.map(call), true)
        }
        return ([call(value)], false)
    }

    static func call(_ value: JSON) -> Element {
        guard let object = value.object else {
            return .failure(RPCElementFailure(id: .null, failure: RPCFailure("Invalid Request.", code: -32600)))
        }
        let id = object["id"] ?? .null
        let version = object["jsonrpc"]
        guard version == .string("2.0") || version == .number(2) else {
            return .failure(RPCElementFailure(id: id, failure: RPCFailure("Invalid Request.", code: -32600)))
        }
        guard let method = object["method"]?.string else {
            return .failure(RPCElementFailure(id: id, failure: RPCFailure("Invalid Request.", code: -32600)))
        }
        switch object["params"] {
        case nil, .null?: return .success(RPCCall(id: id, method: method, params: []))
        case .array(let params)?: return .success(RPCCall(id: id, method: method, params: params))
        default: return .failure(RPCElementFailure(id: id, failure: RPCFailure("Invalid params.", code: -32602)))
        }
    }

    /// One answer object.
    static func answer(id: JSON, _ outcome: Result<JSON, RPCFailure>) -> JSON {
        var object: [String: JSON] = ["id": id, "jsonrpc": .string("2.0")]
        switch outcome {
        case .success(let result): object["result"] = result
        case .failure(let failure):
            object["error"] = .object(["code": .number(Double(failure.code)), "message": .string(failure.message)])
        }
        return .object(object)
    }

    static func encode(_ value: JSON) -> [UInt8] { value.bytes }
}

/// The secret token, `"token:SECRET"` as a call's first parameter (aria2's `--rpc-secret`).
struct RPCToken: Sendable {
    /// `nil`: no secret is asked (run as `aria2c` without `--rpc-secret`).
    let secret: String?

    /// The parameters without the token; `nil` when the secret is asked and not given right. A
    /// leading `token:` parameter is taken off even when no secret is set, as aria2 does.
    func check(_ params: [JSON]) -> [JSON]? {
        let given = params.first?.string.flatMap { $0.hasPrefix("token:") ? String($0.dropFirst(6)) : nil }
        let rest = given == nil ? params : Array(params.dropFirst())
        guard let secret else { return rest }
        guard let given, Self.same(given, secret) else { return nil }
        return rest
    }

    /// Compares without stopping at the first difference.
    private static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<min(x.count, y.count) { difference |= x[index] ^ y[index] }
        return difference == 0
    }
}
