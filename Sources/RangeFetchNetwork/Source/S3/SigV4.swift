import RangeFetchBase
import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`), as a pure value: credentials, region and the
/// clock are passed in, so it is checked against AWS's published examples.
///
/// The canonical request is built from the URL as given: its path is taken as already
/// percent-encoded (S3 signs it as sent, never encoded twice), and its query is decoded and
/// re-encoded in AWS's way, pairs sorted by name.
public struct SigV4Signer: Sendable, Equatable {
    /// The access key id (`AWS_ACCESS_KEY_ID`).
    public var accessKeyID: String
    /// The secret key (`AWS_SECRET_ACCESS_KEY`); it never leaves the process.
    public var secretAccessKey: String
    /// A temporary credential's token (`AWS_SESSION_TOKEN`), sent as `x-amz-security-token`.
    public var sessionToken: String?
    /// The region of the signing scope.
    public var region: String
    /// The service of the signing scope (`s3`).
    public var service: String

    /// What the payload hash says for bodies that are not signed (every GET and HEAD here).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// A signer with these credentials for `service` in `region`.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, region: String,
                service: String = "s3") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.region = region
        self.service = service
    }

    /// The header lines to add to a request of `method` for `url` at `time` (seconds since 1970):
    /// `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token` when there is a token,
    /// `signing` (fields S3 insists be signed, e.g. `x-amz-checksum-mode`), and `Authorization`.
    /// Every request is signed afresh (a signature is good for minutes).
    public func headerLines(method: String, url: String, time: Int, signing: [(String, String)] = []) -> [String] {
        var headers = [("x-amz-content-sha256", Self.unsignedPayload), ("x-amz-date", Self.amzDate(time))] + signing
        if let sessionToken { headers.append(("x-amz-security-token", sessionToken)) }
        let authorization = self.authorization(method: method, url: url, headers: headers,
                                               payloadHash: Self.unsignedPayload, time: time)
        return headers.map { "\($0.0): \($0.1)" } + ["Authorization: \(authorization)"]
    }

    /// The `Authorization` value for a request whose signed headers are `headers` plus `host`
    /// (taken from the URL unless given).
    public func authorization(method: String, url: String, headers: [(String, String)], payloadHash: String,
                              time: Int) -> String {
        let parts = canonicalParts(url)
        var all = headers.map { ($0.0.lowercased(), Self.trim($0.1)) }
        if !all.contains(where: { $0.0 == "host" }) { all.append(("host", parts.host)) }
        all.sort { $0.0 < $1.0 }
        let signed = all.map(\.0).joined(separator: ";")
        let canonicalRequest = [method, parts.path, parts.query,
                                all.map { "\($0.0):\($0.1)\n" }.joined(), signed, payloadHash].joined(separator: "\n")
        let day = String(Self.amzDate(time).prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", Self.amzDate(time), scope, Self.sha256Hex(canonicalRequest)]
            .joined(separator: "\n")
        var key = Self.hmac(key: Array("AWS4\(secretAccessKey)".utf8), day)
        for part in [region, service, "aws4_request"] { key = Self.hmac(key: key, part) }
        let signature = Self.hex(Self.hmac(key: key, stringToSign))
        return "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(scope), SignedHeaders=\(signed), Signature=\(signature)"
    }

    /// `host` (with a port that is not the scheme's default), the path, and the canonical query.
    private func canonicalParts(_ url: String) -> (host: String, path: String, query: String) {
        guard let parts = URLParts(url) else { return ("", "/", "") }
        let defaultPort = parts.scheme == "https" ? 443 : 80
        let host = parts.port == defaultPort ? parts.host : "\(parts.host):\(parts.port)"
        let path = parts.path
        let rawQuery = parts.query ?? ""
        let pairs = rawQuery.split(separator: "&").map { pair -> (String, String) in
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.encode(Self.decode(String(halves[0])))
            let value = halves.count > 1 ? Self.encode(Self.decode(String(halves[1]))) : ""
            return (name, value)
        }.sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
        return (host, path.isEmpty ? "/" : path, pairs.map { "\($0.0)=\($0.1)" }.joined(separator: "&"))
    }

    // MARK: Encoding, hashing, time

    /// AWS's URI encoding: every byte but `A-Z a-z 0-9 - _ . ~` as `%XX` (upper case); with
    /// `keepSlash`, `/` too stays (object keys in a path).
    public static func encode(_ text: String, keepSlash: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out.append("/")
            default:
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// Percent-decoding (`+` stays `+`: S3 query values are not form-encoded).
    package static func decode(_ text: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
               let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func trim(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    /// `YYYYMMDDTHHMMSSZ` in UTC.
    public static func amzDate(_ time: Int) -> String {
        var seconds = time_t(time)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    package static func sha256Hex(_ text: String) -> String {
        let digest = Digest(.sha256)
        digest.update(Array(text.utf8))
        return digest.finalize().hex
    }

    package static func hmac(key: [UInt8], _ message: String) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let data = Array(message.utf8)
        _ = HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, &output, &length)
        return Array(output.prefix(Int(length)))
    }

    package static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
