import Basics
import Foundation
import PostbackCLI
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 24 item 6: a copy of a stored postback with other unsigned values is a duplicate (the first
/// copy stays stored, unchanged), and the disagreement is kept as evidence: which fields, both
/// values, the copy's route and client, within a daily byte budget, and counted by route and field.
@Suite struct ConflictingCopyTests {
    static func skan4(_ id: String, fine: Int? = nil, coarse: String? = nil, country: String? = nil) throws -> [UInt8] {
        TestPostbacks.skan4(
            transactionID: id, conversionValue: fine, adNetworkID: "conflict.skadnetwork", coarseConversionValue: coarse,
            countryCode: country)
    }

    /// A POST through a trusted proxy naming `client`.
    static func post(_ body: [UInt8], path: String, client: String, port: Int) throws -> String {
        try RawConnection.post(body, path: path, headers: ["Host: x", "X-Forwarded-For: \(client)"], port: port)
    }

    static func conflicts(_ server: TestServer) throws -> [ConflictRecord] {
        var records: [ConflictRecord] = []
        for segment in try server.segments(.conflicts) {
            let text = try String(contentsOfFile: segment.path, encoding: .utf8)
            for line in text.split(separator: "\n") { records.append(try ConflictRecord(line: Array(line.utf8))) }
        }
        return records
    }

    @Test func replaysWithOtherValuesKeepTheFirstCopyAndLeaveEvidence() throws {
        let server = try TestServer {
            $0.trustedProxies = [CIDR("127.0.0.1")!]
            $0.adNetworkPath = "/network/postbacks"
        }
        defer { server.stop() }
        let port = server.server.port
        let genuine = try Self.skan4("conflict-1", fine: 10, country: "US")
        #expect(
            try Self.post(genuine, path: "/.well-known/skadnetwork/report-attribution/", client: "203.0.113.1", port: port)
                .contains(#""status":"stored""#))
        // The same body again: a plain retry, no conflict.
        #expect(
            try Self.post(genuine, path: "/.well-known/skadnetwork/report-attribution/", client: "203.0.113.1", port: port)
                .contains(#""status":"duplicate""#))
        let replays: [([UInt8], String, String)] = [
            (
                try Self.skan4("conflict-1", fine: 40, country: "US"), "/.well-known/appattribution/report-attribution/",
                "198.51.100.2"
            ),
            (try Self.skan4("conflict-1", coarse: "high", country: "US"), "/network/postbacks", "198.51.100.3"),
            (
                try Self.skan4("conflict-1", fine: 10, country: "FR"), "/.well-known/skadnetwork/report-attribution/",
                "198.51.100.4"
            ),
        ]
        for (body, path, client) in replays {
            let reply = try Self.post(body, path: path, client: client, port: port)
            #expect(reply.hasPrefix("HTTP/1.1 200") && reply.contains(#""status":"duplicate""#), "\(reply.prefix(300))")
        }
        // Apple's own 4.0 example, replayed with another fine value and a country.
        let apple = try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json")
        #expect(
            try Self.post(apple, path: "/.well-known/skadnetwork/report-attribution/", client: "203.0.113.9", port: port)
                .contains(#""status":"stored""#))
        var appleText = String(decoding: apple, as: UTF8.self)
        appleText = appleText.replacingOccurrences(
            of: #""conversion-value": 63"#, with: #""conversion-value": 1, "country-code": "FR""#)
        #expect(appleText.contains(#""country-code": "FR""#))
        #expect(
            try Self.post(
                Array(appleText.utf8), path: "/.well-known/skadnetwork/report-attribution/", client: "198.51.100.5", port: port
            )
            .contains(#""status":"duplicate""#))

        let stored = try server.records(.postbacks)
        #expect(stored.count == 2, "one record per postback, the first copy")
        #expect(stored.first?.body == genuine)
        #expect(stored.first?.attribution?.fineValue == 10 && stored.first?.attribution?.countryCode == "US")

        // Evidence is written after the reply: give the writer a moment.
        var evidence: [ConflictRecord] = []
        for _ in 0..<50 {
            evidence = try Self.conflicts(server)
            if evidence.count == 4 { break }
            usleep(20_000)
        }
        #expect(evidence.count == 4, "\(evidence)")
        let summary = evidence.map { record in
            "\(record.route) \(record.client) "
                + record.differences.map { "\($0.field.rawValue):\($0.stored)>\($0.copy)" }.joined(separator: ",")
        }.sorted()
        #expect(
            summary == [
                "ad-network 198.51.100.3 conversion-value:10>,coarse-conversion-value:>high",
                "appattribution-developer-copy 198.51.100.2 conversion-value:10>40",
                "skadnetwork-developer-copy 198.51.100.4 country-code:US>FR",
                "skadnetwork-developer-copy 198.51.100.5 conversion-value:63>1,country-code:>FR",
            ], "\(summary)")
        let first = try #require(evidence.first { $0.client == "198.51.100.2" })
        #expect(first.dedupKey == "conflict-1:0/development")
        #expect(first.storedAttribution.fineValue == 10 && first.storedAttribution.adNetworkID == "conflict.skadnetwork")
        let fields: [(String, String, Double)] = [
            ("appattribution-developer-copy", "conversion-value", 1), ("ad-network", "conversion-value", 1),
            ("ad-network", "coarse-conversion-value", 1), ("skadnetwork-developer-copy", "country-code", 2),
            ("skadnetwork-developer-copy", "conversion-value", 1),
        ]
        var metricTotal = 0.0
        for (route, field, count) in fields {
            let value = try server.metric(#"postback_conflicting_copies_total{route="\#(route)",field="\#(field)"}"#)
            #expect(value == count, "\(route) \(field)")
            metricTotal += value ?? 0
        }

        // The nightly job lists them in the day's manifest, by app, ad network and field: the same counts.
        server.stop()
        let today = UTCTimestamp.now().day
        let io = CommandIO(standardOutput: MemorySink(), standardError: MemorySink())
        #expect(
            PostbackCommand.run(
                [
                    "aggregate", "--data", server.dataDirectory, "--schemas", Fixtures.sampleSchemas, "--date", "\(today)",
                    "--allow-open-day",
                ], io: io) != .usageOrIOError)
        guard
            case .object(let manifest) = try StrictJSONParser.parse(
                Array(try Data(contentsOf: URL(fileURLWithPath: server.layout.manifest(day: today))))),
            case .array(let rows)? = manifest["conflicts"]
        else {
            Issue.record("manifest has no conflicts")
            return
        }
        #expect(manifest["conflicting_copies"] == .number(try #require(Self.number("4"))))
        var listed: [String: String] = [:]
        var manifestTotal = 0.0
        for case .object(let row) in rows {
            guard case .string(let network)? = row["ad_network_id"], case .string(let field)? = row["field"],
                case .number(let copies)? = row["copies"]
            else { continue }
            listed["\(network) \(field)"] = copies.text
            manifestTotal += Double(copies.text) ?? 0
        }
        #expect(
            listed == [
                "conflict.skadnetwork conversion-value": "2", "conflict.skadnetwork coarse-conversion-value": "1",
                "conflict.skadnetwork country-code": "1", "com.example conversion-value": "1", "com.example country-code": "1",
            ], "\(listed)")
        #expect(manifestTotal == metricTotal, "the manifest and the metric count the same disagreements")

        // The rows: each conflict is counted in the row of its key's stored copy, in the detail table;
        // the rollups hold production (and rejected) rows only, so there the development postbacks'
        // conflicts (conflict.skadnetwork, signed with the test key) are not, and Apple's are.
        for table in ["postback_detail_daily", "campaign_daily", "publisher_daily", "country_daily"] {
            let csv = try String(contentsOfFile: server.layout.aggregateFile(table: table, day: today), encoding: .utf8)
            let lines = csv.split(separator: "\n").map {
                $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            }
            let header = lines[0]
            let column = try #require(header.firstIndex(of: "conflicting_copies"), "\(table) has conflicting_copies")
            let network = try #require(header.firstIndex(of: "ad_network_id"))
            var byNetwork: [String: Int] = [:]
            for row in lines.dropFirst() { byNetwork[row[network], default: 0] += Int(row[column]) ?? 0 }
            let development = table == "postback_detail_daily" ? 3 : nil
            #expect(byNetwork["conflict.skadnetwork"] == development && byNetwork["com.example"] == 1, "\(table): \(byNetwork)")
        }

        // The report's section "Copies that disagree", by ad network and field.
        let page = TestSupport.run(["report", "--data", server.dataDirectory, "--date", "\(today)", "--out", "-"])
        #expect(page.status != .usageOrIOError, "\(page.stderr)")
        let section = try #require(
            page.stdout.range(of: "<section id=\"conflicts\"").map { String(page.stdout[$0.lowerBound...].prefix(4000)) })
        #expect(section.contains("Copies that disagree"))
        for expected in [
            "conflict.skadnetwork", "com.example", "conversion-value", "coarse-conversion-value", "country-code",
            "Copies that disagreed",
        ] {
            #expect(section.contains(expected), "\(expected) in \(section)")
        }
    }

    static func number(_ text: String) -> JSONNumber? {
        guard case .number(let number)? = try? StrictJSONParser.parse(Array(text.utf8)) else { return nil }
        return number
    }

    @Test func aFloodOfConflictingReplaysStaysWithinTheBudget() throws {
        let server = try TestServer {
            $0.rejectedBytesPerDay = 64 << 10
            $0.rejectedBytesPerClientPerDay = 8 << 10
        }
        defer { server.stop() }
        #expect(try server.post(try Self.skan4("conflict-flood", fine: 0)).status == 200)
        for index in 0..<400 {
            #expect(try server.post(try Self.skan4("conflict-flood", fine: 1 + index % 63)).status == 200)
        }
        usleep(300_000)
        let bytes = try server.segments(.conflicts).reduce(0) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int) ?? 0)
        }
        #expect(bytes > 0 && bytes <= 8 << 10, "one client's share: \(bytes) bytes")
        #expect(
            try server.metric(#"postback_conflicting_copies_total{route="skadnetwork-developer-copy",field="conversion-value"}"#)
                == 400)
        let notStored = try #require(try server.metric(#"postback_conflicts_not_stored_total{reason="daily-budget"}"#))
        #expect(
            Int(notStored) + (try Self.conflicts(server).count) == 400, "every conflict is either kept or counted as not kept")
        #expect(try server.records(.postbacks).count == 1)
    }
}
