// swift-tools-version: 6.0
//
// The postback verifier and measurement pipeline. Only the toolchain's own modules and Debian's C
// libraries (through `systemLibrary` targets) are used: no outside Swift packages can be fetched.
//
// Layering, bottom up:
//   COpenSSL, CMicroHTTPD, CCurl, CZstd   Debian's C libraries (system library targets)
//   Locking         a pthread-mutex lock (visible to ThreadSanitizer, unlike Synchronization.Mutex)
//   BuildStamp      the release and the git commit of the build (written by BuildStampPlugin)
//   Basics          foundations with no postback in them: strict JSON, Base64, hex, UTC time, durable
//                   files, line and record readers, SystemCallError, EINTR-safe fd I/O, flock,
//                   Parallel.run, the Prometheus text writer
//   PostbackCrypto  the only module that touches OpenSSL: keys, ECDSA verify/sign, SHA-256
//   Postbacks       the postback domain: models, signed messages, the verifier, Apple's keys
//   PostbackStore   the on-disk spool: record format, layout, segment reading and writing
//   PostbackServer  the webhook receiver (libmicrohttpd)       PostbackClient  libcurl: `send`, the S3 client
//   SpoolDelivery   ships sealed spool segments to a destination (an S3 bucket; partner forwarding next)
//   Parquet         Parquet files written (and read back): the only module that touches libzstd
//   AggregateSchema the published data's contract: tables, columns, types, manifests; reading them back
//   Aggregation     conversion schemas and the nightly job      Reporting  the static HTML report
//   PostbackTesting test signing, synthetic postbacks and spools: for tests, benches and the CLI's
//                   `generate`/`synthesize`; no core module imports it
//   PostbackCLI     the subcommands, callable from tests
//   postback        the executable: a thin entry point
//   TestSupport     (Tests/TestSupport) the helpers every test target shares; only tests import it
import PackageDescription

let package = Package(
    name: "postback",
    products: [
        .executable(name: "postback", targets: ["postback"])
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        .target(name: "Locking"),
        // The release, and the commit the build was made from (BuildStampPlugin, scripts/build-stamp).
        .plugin(name: "BuildStampPlugin", capability: .buildTool()),
        .target(name: "BuildStamp", plugins: ["BuildStampPlugin"]),
        .target(name: "Basics", dependencies: ["Locking"]),
        .target(name: "PostbackCrypto", dependencies: ["Basics", "COpenSSL", "Locking"]),
        .target(name: "Postbacks", dependencies: ["Basics", "PostbackCrypto", "Locking"]),
        .target(name: "PostbackStore", dependencies: ["Basics", "Postbacks", "PostbackCrypto", "Locking"]),
        .target(name: "CMicroHTTPDShim", dependencies: ["CMicroHTTPD"]),
        .target(name: "CCurlShim", dependencies: ["CCurl"]),
        .target(
            name: "PostbackServer",
            dependencies: [
                "Basics", "BuildStamp", "Locking", "Postbacks", "PostbackStore", "PostbackCrypto", "CMicroHTTPD",
                "CMicroHTTPDShim",
            ]),
        .target(name: "PostbackClient", dependencies: ["Basics", "Locking", "CCurl", "CCurlShim"]),
        .target(
            name: "SpoolDelivery",
            dependencies: ["Basics", "Locking", "Postbacks", "PostbackStore", "PostbackCrypto", "PostbackClient"]),
        // The Parquet file writer (Thrift footers, pages, levels, dictionaries, statistics, zstd).
        .target(name: "Parquet", dependencies: ["Basics", "CZstd"]),
        // The published data's contract: tables, columns and their types, manifests, and reading them back.
        .target(name: "AggregateSchema", dependencies: ["Basics", "Parquet"]),
        .target(
            name: "Aggregation",
            dependencies: ["Basics", "Locking", "Postbacks", "PostbackStore", "PostbackCrypto", "Parquet", "AggregateSchema"]),
        .target(
            name: "Reporting",
            dependencies: ["Basics", "Postbacks", "PostbackCrypto", "PostbackStore", "Parquet", "AggregateSchema"]),
        // The read-only numbers API over the published aggregates (`postback api`).
        .target(
            name: "NumbersAPI",
            dependencies: [
                "Basics", "Locking", "PostbackCrypto", "PostbackStore", "AggregateSchema", "Aggregation", "Parquet", "Reporting",
                "PostbackServer",
            ]),
        // Test signing and synthetic postbacks and spools: for tests, benches, `generate` and `synthesize`.
        .target(
            name: "PostbackTesting", dependencies: ["Basics", "PostbackCrypto", "Postbacks", "PostbackStore"]),
        .target(
            name: "PostbackCLI",
            dependencies: [
                "PostbackTesting", "Basics", "BuildStamp", "Locking", "Postbacks", "PostbackCrypto", "PostbackStore",
                "PostbackServer", "PostbackClient", "SpoolDelivery", "AggregateSchema", "Aggregation", "Reporting", "NumbersAPI",
            ]
        ),
        .executableTarget(name: "postback", dependencies: ["PostbackCLI"]),
        // scripts/ecdsa-differential: the P-256 table path against EVP over millions of signatures.
        .executableTarget(name: "ecdsa-differential", dependencies: ["PostbackCrypto", "Locking"]),

        // Helpers the test targets share: running `postback` in-process, fixtures, temporary
        // directories, a test key's postbacks, storage that fails on demand.
        .target(
            name: "TestSupport",
            dependencies: [
                "Locking", "Basics", "PostbackCrypto", "Postbacks", "PostbackStore", "PostbackTesting", "PostbackServer",
                "PostbackClient", "SpoolDelivery", "PostbackCLI",
            ],
            path: "Tests/TestSupport"),
        .testTarget(name: "BasicsTests", dependencies: ["Basics"]),
        .testTarget(name: "PostbackCryptoTests", dependencies: ["PostbackCrypto"]),
        .testTarget(
            name: "PostbacksTests", dependencies: ["TestSupport", "PostbackTesting", "Basics", "Postbacks", "PostbackCrypto"]),
        .testTarget(
            name: "PostbackStoreTests",
            dependencies: ["TestSupport", "PostbackTesting", "Basics", "PostbackStore", "Postbacks", "PostbackCrypto"]),
        .testTarget(
            name: "PostbackServerTests",
            dependencies: [
                "TestSupport", "PostbackTesting", "Basics", "BuildStamp", "PostbackServer", "PostbackStore", "Postbacks",
                "PostbackCrypto", "PostbackClient", "PostbackCLI",
            ]),
        .testTarget(
            name: "ReportingTests",
            dependencies: [
                "TestSupport", "PostbackTesting", "Basics", "Reporting", "Aggregation", "AggregateSchema", "PostbackStore",
                "Postbacks", "PostbackCrypto", "PostbackCLI", "Parquet",
            ]),
        .testTarget(
            name: "AggregationTests",
            dependencies: [
                "TestSupport", "PostbackTesting", "Basics", "Aggregation", "AggregateSchema", "Parquet", "PostbackStore",
                "Postbacks", "PostbackCrypto", "PostbackCLI",
            ]),
        .testTarget(
            name: "PostbackCLITests",
            dependencies: [
                "TestSupport", "Basics", "BuildStamp", "PostbackCLI", "Postbacks", "PostbackCrypto", "Parquet", "AggregateSchema",
            ]),
        .testTarget(
            name: "NumbersAPITests",
            dependencies: [
                "TestSupport", "PostbackTesting", "Basics", "NumbersAPI", "Reporting", "AggregateSchema", "Aggregation",
                "PostbackServer", "PostbackCrypto", "PostbackCLI", "Parquet",
            ]),
        .testTarget(
            name: "SpoolDeliveryTests",
            dependencies: [
                "TestSupport", "PostbackTesting", "Basics", "SpoolDelivery", "PostbackClient", "PostbackStore", "PostbackServer",
                "PostbackCLI", "Postbacks", "PostbackCrypto",
            ]),
    ]
)

// Strict settings on every Swift target (the swift-log pattern).
for target in package.targets where target.type != .system && target.type != .plugin {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
