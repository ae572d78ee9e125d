import Foundation

/// The web servers people run besides nginx, each installed from Debian's packages by
/// `scripts/test.sh`, started on 127.0.0.1 for one test with a configuration of its own and
/// stopped by pid: Apache httpd, lighttpd, and Python's `http.server` (HTTP/1.0, no ranges).
final class OtherServer {
    enum Kind: String, CaseIterable, Sendable {
        case apache, lighttpd, pythonHTTPServer
    }

    let kind: Kind
    let port: Int
    let prefix: TemporaryDirectory
    private let process: Process

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Serves `docroot` at `/`. The docroot and its files must be readable by `nobody` (Apache
    /// drops root privileges); ``OtherServer/shareable(_:)`` makes them so.
    init(_ kind: Kind, docroot: String) throws {
        self.kind = kind
        prefix = try TemporaryDirectory("rf-\(kind.rawValue)")
        port = try freeLoopbackPort()
        let p = prefix.path
        switch kind {
        case .apache:
            let binary = try Self.find("/usr/sbin/apache2", package: "apache2")
            let modules = "/usr/lib/apache2/modules"
            let config = """
            ServerRoot \(p)
            LoadModule mpm_event_module \(modules)/mod_mpm_event.so
            LoadModule authz_core_module \(modules)/mod_authz_core.so
            User nobody
            Group nogroup
            ServerName 127.0.0.1
            Listen 127.0.0.1:\(port)
            PidFile \(p)/httpd.pid
            ErrorLog \(p)/error.log
            LogFormat "%r %>s %B" ranges
            CustomLog \(p)/access.log ranges
            DocumentRoot \(docroot)
            <Directory \(docroot)>
                Require all granted
            </Directory>
            """
            try config.write(toFile: p + "/httpd.conf", atomically: true, encoding: .utf8)
            process = try TestProcess.startServer(binary, ["-f", p + "/httpd.conf", "-DFOREGROUND"], port: port) {
                ": " + ((try? String(contentsOfFile: p + "/error.log", encoding: .utf8)) ?? "")
            }
        case .lighttpd:
            let binary = try Self.find("/usr/sbin/lighttpd", package: "lighttpd")
            let config = """
            server.document-root = "\(docroot)"
            server.bind = "127.0.0.1"
            server.port = \(port)
            server.pid-file = "\(p)/lighttpd.pid"
            server.errorlog = "\(p)/error.log"
            server.modules = ("mod_accesslog")
            accesslog.filename = "\(p)/access.log"
            accesslog.format = "%r %>s %b"
            mimetype.assign = ("" => "application/octet-stream")
            """
            try config.write(toFile: p + "/lighttpd.conf", atomically: true, encoding: .utf8)
            process = try TestProcess.startServer(binary, ["-D", "-f", p + "/lighttpd.conf"], port: port) {
                ": " + ((try? String(contentsOfFile: p + "/error.log", encoding: .utf8)) ?? "")
            }
        case .pythonHTTPServer:
            let binary = try Self.find("/usr/bin/python3", package: "python3")
            process = try TestProcess.startServer(binary, ["-m", "http.server", "--bind", "127.0.0.1", "--directory", docroot,
                                                           String(port)], port: port)
        }
    }

    deinit { stop() }

    func stop() {
        stopProcess(process, signal: SIGTERM, graceSeconds: 5)
    }

    /// Request lines with their status (`GET /f.bin HTTP/1.1 206 …`), from the access log
    /// (Apache, lighttpd; empty for Python's server).
    func accessLog() -> [String] {
        let text = (try? String(contentsOfFile: prefix.path + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Opens `directory` and its files to other users (Apache serves as `nobody`).
    static func shareable(_ directory: String) throws {
        var path = directory
        while path != "/" && !path.isEmpty {
            chmod(path, 0o755)
            path = (path as NSString).deletingLastPathComponent
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            chmod(directory + "/" + name, 0o644)
        }
    }

    private static func find(_ path: String, package: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(path) is not installed: run scripts/test.sh, which installs \(package)")
        }
        return path
    }
}
