import Foundation

/// A caching reverse proxy on 127.0.0.1: nginx's `proxy_cache` with the `slice` module in front
/// of `origin`, the configuration docs/fleet.md explains. Clients that ask it for any ranges of
/// one file share the slices it fetched once; its cache lives in its own prefix. Stopped by pid.
final class CachingNginx {
    let port: Int
    let prefix: TemporaryDirectory
    private let process: Process

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// - Parameters:
    ///   - origin: the server it fetches from, `http://127.0.0.1:PORT`.
    ///   - slice: the size of the pieces it fetches and caches (nginx's `slice`).
    init(origin: String, slice: String = "4m") throws {
        prefix = try TemporaryDirectory("rf-cache")
        port = try freeLoopbackPort()
        process = try NginxServer.launch(prefix: prefix.path, port: port,
                                         http: Self.httpBlock(port: port, origin: origin, slice: slice, cache: prefix.path + "/cache"))
    }

    deinit { stop() }

    /// Whether this machine's nginx was built with the slice module (Debian's is).
    static var sliceModuleAvailable: Bool {
        guard let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile),
              let result = try? TestProcess.run(nginx, ["-V"]) else { return false }
        return (result.stdout + result.stderr).contains("--with-http_slice_module")
    }

    /// Parsed lines of its access log: what it served to clients.
    func accessLog() -> [NginxServer.LogEntry] {
        NginxServer.accessLog(prefix: prefix.path)
    }

    /// Stops nginx by its pid and waits for it to exit.
    func stop() {
        stopProcess(process, signal: SIGQUIT, graceSeconds: 5)
    }

    /// The cache's own server lines (those of docs/fleet.md, with test paths and ports).
    static func httpBlock(port: Int, origin: String, slice: String, cache: String) -> String {
        """
            proxy_cache_path \(cache) levels=1:2 keys_zone=fleet:10m max_size=2g inactive=1h use_temp_path=off;
            server {
                listen 127.0.0.1:\(port);
                location / {
                    slice \(slice);
                    proxy_cache fleet;
                    proxy_cache_key $uri$slice_range;
                    proxy_set_header Range $slice_range;
                    proxy_cache_valid 200 206 1h;
                    proxy_cache_lock on;
                    proxy_cache_lock_timeout 10m;
                    proxy_cache_lock_age 10m;
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_pass \(origin);
                }
            }
        """
    }
}
