// swift-tools-version:6.0
import PackageDescription

// Module map (see README "Architecture"):
//   AASAEngine   pure AASA engine: JSON, validation, matcher, diff. No I/O, no dependencies.
//   AASAEdgeCLI  the `aasa-edge` executable: argument parsing and wiring only.
// Later modules (origin fetcher + its C shim, store, cache policy, HTTP server) sit beside these.
let package = Package(
    name: "aasa-edge",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "aasa-edge", targets: ["AASAEdgeCLI"]),
        .library(name: "AASAEngine", targets: ["AASAEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(name: "AASAEngine"),
        .executableTarget(
            name: "AASAEdgeCLI",
            dependencies: [
                "AASAEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "AASAEngineTests", dependencies: ["AASAEngine"]),
        .testTarget(name: "AASAEdgeCLITests", dependencies: ["AASAEngine"]),
    ]
)
