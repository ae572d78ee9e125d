// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "rangefetch",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RangeFetch", targets: ["RangeFetch"]),
        .executable(name: "rangefetch", targets: ["rangefetch"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // The daemon's HTTP server (NIOHTTP1 parses; no hand-written HTTP).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // Typed, non-variadic wrappers over libcurl (Swift cannot call C variadics).
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("curl")]),
        // libcrypto's EVP digests.
        .target(name: "COpenSSL", linkerSettings: [.linkedLibrary("crypto")]),
        // libc calls Glibc does not export to Swift (fallocate needs _GNU_SOURCE; mallopt).
        .target(name: "CFileShims"),
        // libxml2's reader for S3's XML answers, opened with dlopen at first use (not linked: an
        // XML stack loaded at start-up costs every download megabytes of resident memory).
        .target(name: "CXML"),
        // The system's SQLite, for the daemon's queue (a table that survives kill -9).
        .target(name: "CSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
        // The library in three targets, each a wall the compiler checks (docs/architecture.md):
        // the base has no network, the network layer knows one download's requests, and the
        // public face (downloads, lists, the queue, Hub repositories, the bench) is what
        // embedders import. What crosses a wall and is not for embedders is `package`.
        // Core, Planning, Storage, Verify, Journal: values, the disk, digests, the journal.
        .target(name: "RangeFetchBase", dependencies: ["COpenSSL", "CFileShims"]),
        // Curl, Source, Probe, Transfer: libcurl, where requests go, the probe, the engine.
        .target(name: "RangeFetchNetwork", dependencies: ["RangeFetchBase", "CCurl", "COpenSSL", "CFileShims", "CXML"]),
        // Download, Batch, Queue, Hub, Bench, Progress: the public face (re-exports the two below).
        .target(name: "RangeFetch", dependencies: ["RangeFetchBase", "RangeFetchNetwork", "CCurl"]),
        // `rangefetch daemon`: aria2's JSON-RPC on a DownloadQueue.
        .target(
            name: "RangeFetchDaemon",
            dependencies: [
                "RangeFetch",
                "CSQLite",
                // DaemonClient: the CLI verbs' calls to a running daemon.
                "CCurl",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            // The web page at `/`, one self-contained file compiled into the binary
            // (`PackageResources.index_html`): no files to install, nothing fetched at run time.
            resources: [.embedInCode("WebPage/index.html")]
        ),
        .executableTarget(
            name: "rangefetch",
            dependencies: [
                "RangeFetch",
                "RangeFetchDaemon",
                "CFileShims",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The daemon's event loop, owned by `rangefetch daemon`.
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RangeFetchTests",
            dependencies: ["RangeFetch", "RangeFetchBase", "RangeFetchNetwork", "RangeFetchDaemon", "CCurl"],
            path: "Tests/RangeFetchTests"
        ),
    ]
)
