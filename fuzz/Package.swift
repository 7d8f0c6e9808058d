// swift-tools-version: 6.0
//
// libFuzzer targets for the parsers that face attacker input. A package of its own because every
// module here is built with coverage and AddressSanitizer; the sources are the main package's,
// through symlinks in Sources/. Build and run with scripts/fuzz.
import PackageDescription

let package = Package(
    name: "postback-fuzz",
    targets: [
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd"),
        .target(name: "Locking"),
        .target(name: "Basics", dependencies: ["Locking"]),
        .target(name: "PostbackCrypto", dependencies: ["Basics", "COpenSSL", "Locking"]),
        .target(name: "Postbacks", dependencies: ["Basics", "PostbackCrypto", "Locking"]),
        .target(name: "PostbackStore", dependencies: ["Basics", "Postbacks", "PostbackCrypto", "Locking"]),
        .target(name: "Parquet", dependencies: ["Basics", "CZstd"]),
        .target(name: "AggregateSchema", dependencies: ["Basics", "Parquet"]),
        .target(
            name: "Aggregation",
            dependencies: ["Basics", "Locking", "Postbacks", "PostbackStore", "PostbackCrypto", "Parquet", "AggregateSchema"]),
        .executableTarget(name: "FuzzPostbackBody", dependencies: ["Postbacks"]),
        .executableTarget(name: "FuzzJWS", dependencies: ["Postbacks"]),
        .executableTarget(name: "FuzzSchema", dependencies: ["Aggregation", "Postbacks"]),
        .executableTarget(name: "FuzzSignature", dependencies: ["PostbackCrypto"]),
        .executableTarget(name: "FuzzImpressionRequest", dependencies: ["Postbacks", "PostbackCrypto"]),
    ]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("InternalImportsByDefault"),
        // SwiftPM's --sanitize=fuzzer instruments only the executable; the libraries are what we fuzz.
        .unsafeFlags(["-sanitize=fuzzer,address"]),
    ]
}
