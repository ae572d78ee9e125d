import Foundation

/// A real nginx on 127.0.0.1 with its own prefix and configuration, started for one test and
/// stopped by pid. Serves `docroot` at `/`, plus:
/// - `/norange/…`: the same files with ranges disabled (`max_ranges 0`);
/// - `/slow/…`: the same files at `slowRate` bytes per second per request (`limit_rate`);
/// - `/redirect/…`: a 302 to the same path under `/`.
final class NginxServer {
    let port: Int
    let prefix: TemporaryDirectory
    let docroot: String
    private let process: Process

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// When started with a certificate: the same docroot over TLS on this port.
    private(set) var tlsPort: Int?

    /// - Parameters:
    ///   - certificate: PEM certificate and key paths for an extra `https` server.
    ///   - http2: whether that server offers HTTP/2 by ALPN (HTTP/1.1 clients still get 1.1).
    ///   - tlsProtocols: nginx's `ssl_protocols` (TLS 1.2 and 1.3, as CDNs offer, unless told).
    ///   - loggedHeader: a request header field whose value both servers log (``headerLog()``).
    init(docroot: String, slowRate: String = "4m", certificate: (cert: String, key: String)? = nil,
         http2: Bool = false, tlsProtocols: String = "TLSv1.2 TLSv1.3", loggedHeader: String? = nil) throws {
        prefix = try TemporaryDirectory("rf-nginx")
        self.docroot = docroot
        port = try freeLoopbackPort()
        let p = prefix.path
        // nginx's variable for a field: lower case, dashes as underscores.
        let headerVariable = loggedHeader.map { "$http_" + $0.lowercased().replacingOccurrences(of: "-", with: "_") }
        let headerLog = headerVariable == nil ? "" : "access_log \(p)/header.log header;"
        var tlsServer = ""
        if let certificate {
            let tls = try freeLoopbackPort()
            tlsPort = tls
            tlsServer = """
            server {
                listen 127.0.0.1:\(tls) ssl\(http2 ? " http2" : "");
                access_log \(p)/tls-access.log tls;
                \(headerLog)
                ssl_session_cache shared:tls:1m;
                ssl_protocols \(tlsProtocols);
                ssl_certificate \(certificate.cert);
                ssl_certificate_key \(certificate.key);
                root \(docroot);
                location /downgrade/ { rewrite ^/downgrade/(.*)$ http://127.0.0.1:\(port)/$1 redirect; }
            }
            """
        }
        let http = """
            log_format tls '$connection $server_protocol $ssl_session_reused $status $body_bytes_sent $ssl_protocol';
            log_format header '$request_method $uri "\(headerVariable ?? "-")"';
            sendfile on;
            default_type application/octet-stream;
            server {
                listen 127.0.0.1:\(port);
                access_log \(p)/access.log ranges;
                \(headerLog)
                root \(docroot);
                location /norange/ { alias \(docroot)/; max_ranges 0; }
                location /slow/ { alias \(docroot)/; limit_rate \(slowRate); }
                location /redirect/ { rewrite ^/redirect/(.*)$ /$1 redirect; }
            }
            \(tlsServer)
        """
        process = try Self.launch(prefix: p, port: port, http: http)
    }

    /// Starts an nginx in `prefix` whose `http` block holds `http` after the common lines: the
    /// access log (`access.log`, format `ranges`), temporary paths inside `prefix`, root's
    /// worker user when run as root. Waits until it listens on `port`.
    static func launch(prefix p: String, port: Int, http: String) throws -> Process {
        guard let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile) else {
            throw TestFailure("nginx is not installed: run scripts/test.sh, which installs it")
        }
        try FileManager.default.createDirectory(atPath: p + "/tmp", withIntermediateDirectories: true)
        let user = getuid() == 0 ? "user root;" : ""
        let config = """
        \(user)
        worker_processes 2;
        pid \(p)/nginx.pid;
        error_log \(p)/error.log warn;
        events { worker_connections 512; }
        http {
            log_format ranges '$request_method $uri $status $body_bytes_sent "$http_range" "$http_if_range" $connection';
            access_log \(p)/access.log ranges;
            client_body_temp_path \(p)/tmp; proxy_temp_path \(p)/tmp; fastcgi_temp_path \(p)/tmp;
            uwsgi_temp_path \(p)/tmp; scgi_temp_path \(p)/tmp;
        \(http)
        }
        """
        try config.write(toFile: p + "/nginx.conf", atomically: true, encoding: .utf8)
        return try TestProcess.startServer(nginx, ["-p", p, "-c", p + "/nginx.conf", "-g", "daemon off;"], port: port) {
            ": " + ((try? String(contentsOfFile: p + "/error.log", encoding: .utf8)) ?? "")
        }
    }

    deinit { stop() }

    /// A docroot, an output directory and an nginx serving the docroot: what most suites need.
    static func withScratchDirectories() throws -> (www: TemporaryDirectory, out: TemporaryDirectory, nginx: NginxServer) {
        let www = try TemporaryDirectory("rf-www")
        return (www, try TemporaryDirectory("rf-out"), try NginxServer(docroot: www.path))
    }

    /// Stops nginx by its pid and waits for it to exit.
    func stop() {
        stopProcess(process, signal: SIGQUIT, graceSeconds: 5)
    }

    struct LogEntry {
        var method: String
        var path: String
        var status: Int
        var bytes: Int64
        var range: String
        /// nginx's serial number of the TCP connection (same number: a reused connection).
        var connection: Int
    }

    /// Parsed access log lines, in order.
    func accessLog() -> [LogEntry] {
        Self.accessLog(prefix: prefix.path)
    }

    /// Parsed lines of the `access.log` in an nginx prefix started by ``launch(prefix:port:http:)``.
    static func accessLog(prefix: String) -> [LogEntry] {
        let text = (try? String(contentsOfFile: prefix + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 4)
            guard fields.count >= 4, let status = Int(fields[2]), let bytes = Int64(fields[3]) else { return nil }
            let rest = fields.count > 4 ? String(fields[4]) : ""
            let range = rest.hasPrefix("\"\"") ? "" : rest.split(separator: "\"").first.map(String.init) ?? ""
            let connection = rest.split(separator: " ").last.flatMap { Int($0) } ?? -1
            return LogEntry(method: String(fields[0]), path: String(fields[1]), status: status, bytes: bytes, range: range,
                            connection: connection)
        }
    }

    struct TLSLogEntry {
        /// nginx's serial number of the TCP connection.
        var connection: Int
        /// `HTTP/1.1` or `HTTP/2.0`.
        var protocolName: String
        /// Whether the TLS session was resumed (an abbreviated handshake).
        var sessionReused: Bool
        var status: Int
        var bytes: Int64
        /// `TLSv1.3` or `TLSv1.2`.
        var tlsVersion: String
    }

    /// Parsed lines of the TLS server's access log, in order.
    func tlsAccessLog() -> [TLSLogEntry] {
        let text = (try? String(contentsOfFile: prefix.path + "/tls-access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 6, let connection = Int(fields[0]), let status = Int(fields[3]),
                  let bytes = Int64(fields[4]) else { return nil }
            return TLSLogEntry(connection: connection, protocolName: String(fields[1]), sessionReused: fields[2] == "r",
                               status: status, bytes: bytes, tlsVersion: String(fields[5]))
        }
    }

    /// The value of `loggedHeader` in each request either server answered, in order (`nil`: the
    /// request had no such field).
    func headerLog() -> [(method: String, path: String, value: String?)] {
        let text = (try? String(contentsOfFile: prefix.path + "/header.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3 else { return nil }
            let value = String(fields[2].dropFirst().dropLast())
            return (String(fields[0]), String(fields[1]), value == "-" ? nil : value)
        }
    }

    func clearAccessLog() throws {
        try "".write(toFile: prefix.path + "/access.log", atomically: false, encoding: .utf8)
    }
}

/// A self-signed certificate for 127.0.0.1 and localhost (PEM paths), made by `openssl req` in
/// `directory`.
func selfSignedCertificate(in directory: TemporaryDirectory) throws -> (cert: String, key: String) {
    let cert = directory.file("cert.pem"), key = directory.file("key.pem")
    let result = try TestProcess.run("/usr/bin/openssl", [
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert,
    ])
    guard result.status == 0 else { throw TestFailure("openssl req failed: \(result.stderr)") }
    return (cert, key)
}
