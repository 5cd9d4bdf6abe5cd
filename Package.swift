// swift-tools-version:6.0
import PackageDescription

// Module map (see README "Architecture"):
//   AASAEngine     pure AASA engine: JSON, validation, matcher, diff. No I/O, no dependencies.
//   CCurlShim      typed C wrappers for libcurl's variadic calls (only OriginFetcher imports it).
//   OriginFetcher  origin fetches with Apple's rules; the only code touching libcurl.
//   AASAEdgeCLI    the `aasa-edge` executable: argument parsing and wiring only.
// Later modules (store, cache policy, HTTP server) sit beside these.
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
        .target(name: "CCurlShim", linkerSettings: [.linkedLibrary("curl")]),
        .target(name: "OriginFetcher", dependencies: ["AASAEngine", "CCurlShim"]),
        .executableTarget(
            name: "AASAEdgeCLI",
            dependencies: [
                "AASAEngine",
                "OriginFetcher",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "AASAEngineTests", dependencies: ["AASAEngine"]),
        // The real HTTPS test origin, shared by the fetcher tests and every edge test.
        .target(name: "TestOrigin", dependencies: ["AASAEngine"], path: "Tests/TestOrigin", exclude: ["test-origin.py"]),
        .testTarget(name: "OriginFetcherTests", dependencies: ["OriginFetcher", "AASAEngine", "TestOrigin"]),
        .testTarget(name: "AASAEdgeCLITests", dependencies: ["AASAEngine", "TestOrigin"]),
    ]
)
