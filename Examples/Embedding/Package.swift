// swift-tools-version:6.0
// An embedder's view of the RangeFetch library: see Sources/Embedding/main.swift and README.md.
import PackageDescription

let package = Package(
    name: "Embedding",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "rangefetch", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "Embedding", dependencies: [.product(name: "RangeFetch", package: "rangefetch")]),
    ]
)
