import Basics
import Foundation
import Locking
import NumbersAPI
import PostbackServer
import PostbackStore
import PostbackTesting
import Reporting
import TestSupport
import Testing

/// A synthetic stretch of days of many apps and ad networks, published by the nightly job as it runs
/// (`postback aggregate`, in process), and the numbers API serving it on loopback with a tokens file
/// and an audit log captured in memory.
final class APIFixture: @unchecked Sendable {
    static let first = UTCDay(year: 2026, month: 3, day: 1)
    /// Eight apps (the two with sample schemas decode revenue) and ten ad networks (five names, each
    /// SKAdNetwork and AdAttributionKit).
    static let apps: [Int64] = [
        525_463_029, 1_229_670_720, 700_000_101, 700_000_202, 700_000_303, 700_000_404, 700_000_505, 700_000_606,
    ]
    static let networkNames = 5
    static var networks: [String] {
        (0..<networkNames).flatMap { ["network\($0).skadnetwork", "network\($0).adattributionkit"] }
    }

    let store = TemporaryDirectory("api")
    let days: Int
    var last: UTCDay { Self.first.adding(days: days - 1) }
    var tokensPath: String { store.path + "/tokens" }
    let audit = Locked<[String]>([])
    let operatorLog = Locked<[String]>([])

    /// - Parameters: days and postbacks a day of the month to publish; `spend`: import a network's cost
    ///   rows for each day (four apps, six networks, three campaigns; USD or EUR by network) first, so
    ///   the cohorts have spend, CPI and ROAS.
    init(days: Int, perDay: Int, seed: UInt64 = 11, spend: Bool = false) throws {
        self.days = days
        var spool = SyntheticSpool()
        spool.apps = Self.apps
        spool.adNetworks = Self.networkNames
        spool.postbacksPerDay = perDay
        spool.seed = seed
        try spool.write(to: StoreLayout(root: store.path), first: Self.first, days: days)
        if spend {
            var random = SplitMix64(seed: seed)
            var csv =
                "date,app_id,ad_network_id,campaign_id,source_identifier,campaign,spend,currency,impressions,clicks,reported_installs\n"
            for offset in 0..<days {
                for app in Self.apps.prefix(4) {
                    for (index, network) in Self.networks.prefix(6).enumerated() {
                        for campaign in 1...3 {
                            let cents = 100 + random.next() % 50_000
                            csv +=
                                "\(Self.first.adding(days: offset)),\(app),\(network),\(campaign),,,\(cents / 100).\(cents % 100 < 10 ? "0" : "")\(cents % 100),"
                                + "\(index % 2 == 0 ? "USD" : "EUR"),,,\n"
                        }
                    }
                }
            }
            try store.write(csv, to: "spend.csv")
            let imported = run([
                "spend", "import", "--data", store.path, "--schemas", Fixtures.sampleSchemas, "--source", "network-cost",
                store.path + "/spend.csv",
            ])
            try #require(imported.status == .success, "spend import: \(imported.stdout)\(imported.stderr)")
        }
        let result = run([
            "aggregate", "--data", store.path, "--schemas", Fixtures.sampleSchemas, "--from", Self.first.description,
            "--to", last.description, "--jobs", "2",
        ])
        try #require(result.status == .success, "aggregate: \(result.stdout)\(result.stderr)")
    }

    /// The API on 127.0.0.1 (a free port), reading the tokens file; no rate limit to speak of.
    func start(
        requestsPerMinute: Int = 1_000_000, today: UTCDay = UTCDay(year: 2026, month: 4, day: 1),
        dashboard: Dashboard.Settings = .init(),
        configure: (inout NumbersAPI.Settings) -> Void = { _ in }
    ) throws -> (server: APIServer, api: NumbersAPI) {
        var settings = NumbersAPI.Settings(dataDirectory: store.path, toolVersion: "postback test")
        settings.dashboard = dashboard
        settings.requestsPerMinute = requestsPerMinute
        settings.burst = min(requestsPerMinute, 1_000_000)
        configure(&settings)
        let audit = audit
        let operatorLog = operatorLog
        let api = NumbersAPI(
            settings: settings, tokens: try TokenStore(path: tokensPath),
            audit: AuditLog { line in audit.withLock { $0.append(line) } },
            log: { line in operatorLog.withLock { $0.append(line) } }, today: { today })
        let server = try APIServer(address: ListenAddress(host: "127.0.0.1", port: 0), api: api, threads: 2)
        return (server, api)
    }

    /// Writes `count` tokens with random scopes (some 'all' on a side), each with its text, to the
    /// tokens file; returns them for the checker.
    func writeTokens(count: Int, seed: UInt64) throws -> [(record: APIToken, text: String)] {
        var random = SplitMix64(seed: seed)
        func subset(_ values: [String]) -> DataScope.Members {
            if random.next() % 8 == 0 { return .all }
            let chosen = values.filter { _ in random.next() % 3 == 0 }
            return .only(Set(chosen.isEmpty ? [values[Int(random.next() % UInt64(values.count))]] : chosen))
        }
        var tokens: [(record: APIToken, text: String)] = []
        for index in 0..<count {
            let scope = DataScope(apps: subset(Self.apps.map(String.init)), networks: subset(Self.networks))
            tokens.append(try APIToken.mint(name: "token-\(index)", scope: scope, expires: nil, today: Self.first))
        }
        try TokenFile.write(tokens.map(\.record), to: tokensPath)
        return tokens
    }
}

/// A GET on the API, with its status, content type and body (curl's answer is the bytes as sent).
struct APIAnswer {
    var status: Int
    var body: String
}

func get(port: Int, _ pathAndQuery: String, token: String?, curlOptions: [String] = []) throws -> APIAnswer {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    var arguments = ["-s", "-o", "-", "-w", "\n%{http_code}", "http://127.0.0.1:\(port)\(pathAndQuery)"] + curlOptions
    if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    let split = text.lastIndex(of: "\n")!
    return APIAnswer(status: Int(text[text.index(after: split)...]) ?? 0, body: String(text[..<split]))
}
