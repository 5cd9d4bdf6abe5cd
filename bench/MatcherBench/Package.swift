// swift-tools-version:6.0
import PackageDescription

// The AASA engine benchmark (issue: P4 matcher). Built in release by bench/run-matcher-bench.sh.
let package = Package(
    name: "MatcherBench",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "aasa-edge", path: "../..")],
    targets: [
        .executableTarget(
            name: "MatcherBench",
            dependencies: [.product(name: "AASAEngine", package: "aasa-edge")],
            swiftSettings: [.unsafeFlags(["-Ounchecked"])]
        ),
    ]
)
