#if canImport(Glibc)
import RangeFetchBase
import Glibc
#endif

/// Where `s3://` URLs go and how their requests are signed, read the way AWS's own tools read
/// it: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (else
/// `AWS_DEFAULT_REGION`), `AWS_PROFILE` with `~/.aws/credentials` and `~/.aws/config`
/// (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`), and `AWS_ENDPOINT_URL_S3` (else
/// `AWS_ENDPOINT_URL`) for S3-compatible stores, which are addressed path-style
/// (`ENDPOINT/BUCKET/KEY`); AWS itself virtual-hosted (`https://BUCKET.s3.REGION.amazonaws.com/KEY`).
public struct S3Configuration: Sendable, Equatable {
    /// `nil`: requests go unsigned (a public bucket, `--no-sign-request`).
    public var signer: SigV4Signer?
    /// The region requests are signed for (and AWS's host names carry).
    public var region: String
    /// An S3-compatible store's base URL (`http://127.0.0.1:9000`); `nil`: AWS.
    public var endpoint: String?

    /// A configuration of its parts; ``load(unsigned:)`` reads one as AWS's tools do.
    public init(signer: SigV4Signer?, region: String, endpoint: String? = nil) {
        self.signer = signer
        self.region = region
        self.endpoint = endpoint
    }

    /// Reads the configuration from `environment` and the files `readFile` returns.
    /// - Parameter unsigned: send requests unsigned whatever credentials there are.
    /// - Throws: a usage error when credentials are missing or incomplete.
    public static func load(unsigned: Bool = false) throws(DownloadError) -> S3Configuration {
        try load(environment: Environment.value, readFile: { FileSystem.smallFileText($0) }, unsigned: unsigned)
    }

    package static func load(environment: (String) -> String?, readFile: (String) -> String?,
                     unsigned: Bool) throws(DownloadError) -> S3Configuration {
        let home = environment("HOME") ?? ""
        let profile = environment("AWS_PROFILE") ?? environment("AWS_DEFAULT_PROFILE") ?? "default"
        let credentialsFile = readFile(environment("AWS_SHARED_CREDENTIALS_FILE") ?? home + "/.aws/credentials")
            .map { INIFile(text: $0).section(profile) } ?? [:]
        let configFile = readFile(environment("AWS_CONFIG_FILE") ?? home + "/.aws/config")
            .map { INIFile(text: $0).section(profile == "default" ? "default" : "profile " + profile) } ?? [:]
        let region = environment("AWS_REGION") ?? environment("AWS_DEFAULT_REGION") ?? configFile["region"] ?? "us-east-1"
        let endpoint = (environment("AWS_ENDPOINT_URL_S3") ?? environment("AWS_ENDPOINT_URL") ?? configFile["endpoint_url"])
            .map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        guard !unsigned else { return S3Configuration(signer: nil, region: region, endpoint: endpoint) }
        let fromEnvironment = environment("AWS_ACCESS_KEY_ID") != nil
        let key = fromEnvironment ? environment("AWS_ACCESS_KEY_ID") : credentialsFile["aws_access_key_id"]
        let secret = fromEnvironment ? environment("AWS_SECRET_ACCESS_KEY") : credentialsFile["aws_secret_access_key"]
        let token = fromEnvironment ? environment("AWS_SESSION_TOKEN") : credentialsFile["aws_session_token"]
        guard let key, let secret else {
            let missing = key == nil ? "no access key" : "an access key without its secret"
            throw DownloadError(.invalidOption, "s3:// URLs need credentials and there is \(missing) (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with ~/.aws/credentials)", remedy: .giveS3Credentials)
        }
        return S3Configuration(signer: SigV4Signer(accessKeyID: key, secretAccessKey: secret, sessionToken: token, region: region),
                               region: region, endpoint: endpoint)
    }

    /// The HTTP(S) URL of an object (or of a bucket, for an empty key).
    public func url(bucket: String, key: String) -> String {
        let path = SigV4Signer.encode(key, keepSlash: true)
        if let endpoint { return "\(endpoint)/\(bucket)/\(path)" }
        return "https://\(bucket).s3.\(region).amazonaws.com/\(path)"
    }

    /// The ListObjectsV2 request for one page of `prefix`; `maxKeys`: at most that many keys
    /// (`nil`: the store's default, 1,000 on S3).
    public func listURL(bucket: String, prefix: String, continuationToken: String?, maxKeys: Int? = nil) -> String {
        // encoding-type=url: a key with a control character would otherwise make the whole
        // page malformed XML (ListingKeyDecoding reads the keys back).
        var query = "encoding-type=url&list-type=2&prefix=" + SigV4Signer.encode(prefix)
        if let continuationToken { query += "&continuation-token=" + SigV4Signer.encode(continuationToken) }
        if let maxKeys { query += "&max-keys=\(maxKeys)" }
        let base = endpoint.map { "\($0)/\(bucket)" } ?? "https://\(bucket).s3.\(region).amazonaws.com"
        return base + "/?" + query
    }

}

/// An `s3://BUCKET/KEY` URL. A key that is empty or ends in `/` names a prefix.
package struct S3Location: Sendable, Equatable {
    /// The bucket.
    public var bucket: String
    /// The object's key, or a prefix (empty, or ending in `/`).
    public var key: String

    /// Whether it names a prefix rather than one object.
    public var isPrefix: Bool { key.isEmpty || key.hasSuffix("/") }

    /// The location named by what follows `s3://` (`BUCKET/KEY`); `SourceAddress` parses
    /// the whole URL.
    package init(bucketAndKey rest: Substring) {
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        bucket = String(rest[..<slash])
        key = slash < rest.endIndex ? String(rest[rest.index(after: slash)...]) : ""
    }

    /// The location of `key` in `bucket`.
    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    /// `s3://BUCKET/KEY`.
    public var url: String { "s3://\(bucket)/\(key)" }
}

/// The `[section]`s of an AWS credentials or config file, `name = value` lines.
package struct INIFile {
    private var sections: [String: [String: String]] = [:]

    package init(text: String) {
        var current = ""
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast().trimmingCharacters())
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters().lowercased()
            sections[current, default: [:]][name] = String(line[line.index(after: equals)...].trimmingCharacters())
        }
    }

    package func section(_ name: String) -> [String: String] { sections[name] ?? [:] }
}
