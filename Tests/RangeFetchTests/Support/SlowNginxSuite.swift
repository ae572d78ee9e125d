import Foundation
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The base of the suites that kill downloads and resume them: a 64 MiB random file behind a
/// real nginx whose `/slow/` location rate-limits each request, and an output folder.
class SlowNginxSuite {
    static let size: Int64 = 64 << 20
    static let connections = 4
    /// nginx `limit_rate` per request, bytes per second.
    static let ratePerRequest: Int64 = 4 << 20

    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer
    let source: String

    init() throws {
        www = try TemporaryDirectory("rf-www")
        out = try TemporaryDirectory("rf-out")
        nginx = try NginxServer(docroot: www.path, slowRate: "\(Self.ratePerRequest / 1024)k")
        source = try www.randomFile("data.bin", size: Self.size)
    }

    deinit { nginx.stop() }

    var url: String { nginx.baseURL + "/slow/data.bin" }
    var target: String { out.file("data.bin") }
    /// Ranges of 16 MiB: nginx's limit_rate grants every request a one-second burst, so smaller
    /// pieces would outrun the limit and finish before a test can kill the process.
    var arguments: [String] { [url, "-o", target, "-n", "\(Self.connections)", "--min-segment", "16M"] }
}
