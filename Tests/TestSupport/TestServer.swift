package import Basics
package import Foundation
package import PostbackCLI
package import PostbackClient
package import PostbackServer
package import PostbackStore
package import SpoolDelivery

/// What the tests read from a receiver, live (`TestServer`) or in process (`InProcessReceiver`):
/// its store and its metrics page.
package protocol ReceiverUnderTest {
    var dataDirectory: String { get }
    var logs: LogCapture { get }
    /// The `/metrics` page's text.
    func metricsPage() throws -> String
}

extension ReceiverUnderTest {
    package var layout: StoreLayout { StoreLayout(root: dataDirectory) }

    /// Every record in `spool`, in segment order.
    package func records(_ spool: StoreLayout.Spool) throws -> [SpoolRecord] {
        var records: [SpoolRecord] = []
        for segment in try segments(spool) {
            let reader = try SegmentReader(path: segment.path)
            while let entry = try reader.next() {
                if case .record(let record, _) = entry { records.append(record) }
            }
        }
        return records
    }

    package func segments(_ spool: StoreLayout.Spool) throws -> [StoreLayout.Segment] {
        try layout.days(spool).flatMap { try layout.segments(spool, day: $0) }
    }

    /// Every local segment of every spool: store-relative path → bytes.
    package func localSegments() throws -> [String: [UInt8]] {
        var segments: [String: [UInt8]] = [:]
        for spool in StoreLayout.Spool.allCases {
            for segment in try self.segments(spool) {
                segments[String(segment.path.dropFirst(dataDirectory.count + 1))] = Array(
                    try Data(contentsOf: URL(fileURLWithPath: segment.path)))
            }
        }
        return segments
    }

    /// The value of one metric line (`name{labels}`), or nil when absent.
    package func metric(_ series: String) throws -> Double? {
        let text = try metricsPage()
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// The value of a delivery family's series for one destination (`name{destination="…"}`), or
    /// nil when absent or the page could not be read.
    package func metric(_ name: String, destination: String) -> Double? {
        try? metric("\(name){destination=\"\(destination)\"}")
    }
}

extension ServerConfiguration {
    /// The tests' receiver: loopback on a free port, a new temporary data directory unless one is
    /// given, development postbacks and the test key accepted, two threads; `configure` adjusts the rest.
    package static func forTests(
        dataDirectory: String?, writerID: String, configure: (inout ServerConfiguration) -> Void
    ) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.listen = "127.0.0.1:0"
        configuration.dataDirectory = dataDirectory ?? TestServer.temporaryDirectory()
        configuration.writerID = writerID
        configuration.allowsDevelopment = true
        configuration.testKeys = [TestPostbacks.trusted]
        configuration.threads = 2
        configure(&configuration)
        return configuration
    }
}

/// The tests' one live receiver: a real server on a loopback port with its own temporary data
/// directory, started the way `serve` starts it, with what runs beside it as options: shipping to
/// an object store, forwarding to partners, storage that fails on demand (`FaultyStorage`), the
/// signing listener (through `configure`). Its log lines are in `logs`.
package final class TestServer: ReceiverUnderTest, @unchecked Sendable {
    /// Shipping sealed segments to an object store (`ship_to`), with a short scan interval and backoff.
    package struct Shipping {
        package var url: String
        /// The object store's credentials and endpoint, in place of the process environment.
        package var environment: [String: String]
        package var localRetentionSeconds: Double?
        package var sharedDedupDays: Int?
        package var backoff = Backoff(initialSeconds: 0.05, maximumSeconds: 0.3)

        package init(
            url: String, environment: [String: String], localRetentionSeconds: Double? = nil, sharedDedupDays: Int? = nil
        ) {
            (self.url, self.environment) = (url, environment)
            (self.localRetentionSeconds, self.sharedDedupDays) = (localRetentionSeconds, sharedDedupDays)
        }
    }

    /// Forwarding verified postbacks to partners (`forward`: a JSON list of destinations; `[]` for none).
    package struct Forwarding {
        package var destinations: String
        /// Where the destinations' `*_env` secrets are read, in place of the process environment.
        package var environment: [String: String]

        package init(_ destinations: String, environment: [String: String] = [:]) {
            (self.destinations, self.environment) = (destinations, environment)
        }
    }

    package let server: PostbackServer
    package let dataDirectory: String
    package let logs: LogCapture
    /// Shipping and forwarding, when asked for and configured, in that order.
    package let delivery: [DeliveryService]
    package var port: Int { server.port }
    package var base: String { "http://127.0.0.1:\(server.port)" }
    package var skadnetworkURL: String { base + "/.well-known/skadnetwork/report-attribution/" }
    package var appAttributionURL: String { base + "/.well-known/appattribution/report-attribution/" }
    /// The signing listener's base URL (`signing.listen` set through `configure`).
    package var signingBase: String? { server.signingPort.map { "http://127.0.0.1:\($0)" } }

    /// - Parameter configure: adjusts the configuration (listen, data dir and writer id are preset).
    package init(
        dataDirectory: String? = nil, writerID: String = "test", storage: any SpoolStorage = POSIXSpoolStorage(),
        shipping: Shipping? = nil, forwarding: Forwarding? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = ServerConfiguration.forTests(dataDirectory: dataDirectory, writerID: writerID) { configuration in
            if shipping != nil || forwarding != nil {
                configuration.sections = ConfigurationSections(DeliveryConfiguration.sections)
                configuration.segmentMaxAgeSeconds = 0.2
            }
            configure(&configuration)
        }
        if let shipping {
            configuration.sections[ShippingConfiguration.self].shipTo = shipping.url
            configuration.sections[ShippingConfiguration.self].localRetentionHours =
                shipping.localRetentionSeconds.map { $0 / 3600 }
            configuration.sections[ShippingConfiguration.self].sharedDedupDays = shipping.sharedDedupDays
        }
        if let forwarding {
            configuration.sections[ForwardingConfiguration.self].forward = try StrictJSONParser.parse(
                Array(forwarding.destinations.utf8))
        }
        (self.dataDirectory, logs) = (configuration.dataDirectory, LogCapture())
        let log = logs.log
        let sharedKeys =
            try shipping.map { try ServeShipping.sharedDedupKeys(configuration, log: log, environment: $0.environment) }
            ?? nil
        server = try PostbackServer.start(configuration: configuration, storage: storage, log: log, sharedDedupKeys: sharedKeys)
        // The wiring `serve` uses (log lines, metrics), with a shorter scan interval and backoff.
        var delivery: [DeliveryService] = []
        if let shipping,
            let service = try ServeShipping.start(
                server: server, log: log, environment: shipping.environment, scanIntervalSeconds: 0.1,
                backoff: shipping.backoff)
        {
            delivery.append(service)
        }
        if let forwarding,
            let service = try ServeForwarding.start(
                server: server, log: log, environment: forwarding.environment, scanIntervalSeconds: 0.1,
                backoff: Backoff(initialSeconds: 0.05, maximumSeconds: 0.3))
        {
            delivery.append(service)
        }
        self.delivery = delivery
    }

    package static func temporaryDirectory() -> String { TemporaryDirectory.create("postback-server-tests") }

    /// Shuts the receiver down, then stops what ran beside it.
    package func stop() {
        server.shutdown()
        for service in delivery { service.stop() }
    }

    package func post(_ body: [UInt8], to url: String? = nil) throws -> HTTPResponse {
        try HTTPClient().post(url ?? skadnetworkURL, body: body)
    }

    package func get(_ path: String) throws -> HTTPResponse {
        try HTTPClient().get(base + path)
    }

    package func metricsPage() throws -> String { try get("/metrics").text }
}
