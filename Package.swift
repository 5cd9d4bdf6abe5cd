// swift-tools-version:6.0
import PackageDescription

// Module map (see README "Architecture"):
//   AASAEngine     pure AASA engine: JSON, validation, matcher, diff. No I/O, no dependencies.
//   CCurlShim      typed C wrappers for libcurl's variadic calls (only OriginFetcher imports it).
//   EdgeModel      shared value types: origin host, failure codes, fetch results, digests, store records.
//   OriginFetcher  origin fetches with Apple's rules; the only code touching libcurl.
//   CachePolicy    pure freshness decisions and the request outcome enum (injected clock).
//   SnapshotStore  versioned snapshots, host state, fetch log in SQLite; the only code touching SQLite.
//   PostgresStore  the same records in PostgreSQL, shared by several edges (change feed, fetch
//                  leases, nodes); the only code touching PostgreSQL.
//   PropagationAnalysis  the probe (origin vs a CDN over time) and the propagation analysis of the ledger.
//   EdgeCore       the caching edge: memory copies, coalesced origin fetches, admin operations.
//   EdgeHTTP       Hummingbird routes: translates requests and EdgeCore replies, no policy.
//   AASAEdgeCLI    the `aasa-edge` executable: argument parsing and wiring only.
let package = Package(
    name: "aasa-edge",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "aasa-edge", targets: ["AASAEdgeCLI"]),
        .library(name: "AASAEngine", targets: ["AASAEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.34.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        .target(name: "AASAEngine"),
        .target(name: "EdgeModel", dependencies: ["AASAEngine"]),
        .target(name: "CCurlShim", linkerSettings: [.linkedLibrary("curl")]),
        .target(name: "OriginFetcher", dependencies: ["AASAEngine", "EdgeModel", "CCurlShim"]),
        .target(name: "CachePolicy"),
        .target(name: "SnapshotStore", dependencies: ["EdgeModel", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(name: "PostgresStore", dependencies: [
            "EdgeModel", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        .target(name: "PropagationAnalysis", dependencies: [
            "AASAEngine", "CachePolicy", "EdgeModel", "OriginFetcher", .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "EdgeCore", dependencies: [
            "AASAEngine", "CachePolicy", "EdgeModel", "OriginFetcher", "PropagationAnalysis", "SnapshotStore", .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        .target(name: "EdgeHTTP", dependencies: [
            "AASAEngine", "CachePolicy", "EdgeCore", "EdgeModel", "PropagationAnalysis",
            .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTLS", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(
            name: "AASAEdgeCLI",
            dependencies: [
                "AASAEngine",
                "CachePolicy",
                "EdgeCore",
                "EdgeHTTP",
                "EdgeModel",
                "PropagationAnalysis",
                "OriginFetcher",
                "PostgresStore",
                "SnapshotStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Helpers every test target may share (a seeded generator for property tests).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "AASAEngineTests", dependencies: ["AASAEngine", "TestSupport"]),
        // The real HTTPS test origin, shared by the fetcher tests and every edge test.
        .target(name: "TestOrigin", dependencies: ["AASAEngine"], path: "Tests/TestOrigin", exclude: ["test-origin.py"]),
        .testTarget(name: "OriginFetcherTests", dependencies: ["OriginFetcher", "EdgeModel", "AASAEngine", "TestOrigin"]),
        .testTarget(name: "CachePolicyTests", dependencies: ["CachePolicy", "TestSupport"]),
        .testTarget(name: "SnapshotStoreTests", dependencies: ["SnapshotStore", "EdgeModel"]),
        // One store suite run against SQLite and a real PostgreSQL, plus what only the shared store does.
        .testTarget(name: "PostgresStoreTests", dependencies: [
            "PostgresStore", "SnapshotStore", "EdgeModel", "TestOrigin", .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "EdgeCoreTests", dependencies: [
            "AASAEngine", "EdgeCore", "EdgeModel", "CachePolicy", "SnapshotStore", "OriginFetcher", "PropagationAnalysis", "TestOrigin",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "EdgeHTTPTests", dependencies: ["EdgeHTTP", "EdgeModel"]),
        .testTarget(name: "PropagationAnalysisTests", dependencies: ["PropagationAnalysis", "EdgeHTTP", "EdgeModel", "AASAEngine", "OriginFetcher", "SnapshotStore", "TestOrigin"]),
        .testTarget(name: "EdgeTests", dependencies: ["AASAEngine", "EdgeModel", "OriginFetcher", "SnapshotStore", "TestOrigin", "TestSupport"]),
        .testTarget(name: "AASAEdgeCLITests", dependencies: ["AASAEngine", "TestOrigin"]),
    ]
)
