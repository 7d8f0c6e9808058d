import AggregateSchema
import Foundation
import PostbackCrypto
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics

/// A small spool built by hand, with every output column checked against answers worked out by
/// hand, plus dedup across writers and days, torn tails, corruption, development and rejected
/// records, byte-identical reruns and crash safety.
@Suite struct AggregateJobTests {
    static let schema = """
        {"schema_id": "t1", "app_id": 111, "effective_from": "2026-02-01", "currency": "USD",
         "windows": {
          "0": {"fine": {"entries": [
                 {"value": 0, "label": "install_only"},
                 {"values": [1, 4], "label": "rev_${bucket}", "events": [{"name": "purchase"}], "revenue_buckets": {"start": 1, "width": 2}},
                 {"value": 63, "label": "whale", "events": [{"name": "purchase", "min_count": 3, "max_count": 5}], "revenue": {"min": 100, "estimate": 150}}]},
                "coarse": {"low": {"label": "low0"}, "high": {"label": "high0", "revenue": {"min": 10, "max": 20}}}},
          "1": {"coarse": {"inherit": "0", "low": {"label": "low1", "events": [{"name": "session", "min_count": 2}]}}}},
         "source_identifier_map": [{"ad_network_id": "net.skadnetwork", "digits": [
            {"positions": [1, 2], "dimension": "campaign", "values": {"12": "spring"}},
            {"positions": [3], "dimension": "geo"},
            {"positions": [4], "dimension": "placement", "values": {"7": "feed"}}],
           "campaign_id_map": {"5": "old_five"}}]}
        """

    static func skan4(
        network: String = "net.skadnetwork", app: Int64 = 111, source: String, sequence: Int = 0, fine: Int? = nil,
        coarse: CoarseConversionValue? = nil, didWin: Bool = true, interaction: AdInteraction = .click,
        type: ConversionType = .download, sourceApp: Int64? = nil
    ) -> Attribution {
        Attribution(
            postbackProtocol: .skadnetwork, version: "4.0", appID: app, adNetworkID: network, sourceIdentifier: source,
            sourceAppID: sourceApp, interaction: interaction, conversionType: type, postbackSequenceIndex: sequence,
            didWin: didWin, fineValue: fine, coarseValue: coarse)
    }

    /// Writes the scenario's spool under `root` (days 2026-03-08 and 2026-03-10; nothing on 03-09).
    static func buildSpool(root: String) throws {
        var spool = SpoolBuilder(root: root)
        let d = "2026-03-10T"
        // A: two writers, the copy received first (rx2, 09:00) wins with its unsigned value.
        // The later copy was stored with a flag: only the counted (first) copy's flags count.
        var laterCopy = record(
            skan4(network: "NET.skadnetwork", source: "1237", fine: 2, sourceApp: 777), key: "A:0", at: d + "10:00:00.000000Z",
            writer: "rx1")
        laterCopy.flags = [
            PostbackFlag(field: .countryCode, action: .dropped, raw: "\"USA\"", note: "not a two-letter country code")
        ]
        spool.add(laterCopy)
        spool.add(
            record(
                skan4(network: "NET.skadnetwork", source: "1237", fine: 3, sourceApp: 777), key: "A:0",
                at: d + "09:00:00.000000Z", writer: "rx2"))
        // B: received in the same microsecond by both: the tie goes to the first segment in order (rx1).
        spool.add(
            record(
                skan4(source: "12", fine: 63, interaction: .view, type: .redownload), key: "B:0", at: d + "11:00:00.000000Z",
                writer: "rx1"))
        spool.add(
            record(
                skan4(source: "12", fine: 0, interaction: .view, type: .redownload), key: "B:0", at: d + "11:00:00.000000Z",
                writer: "rx2"))
        // K: a corrupt line in the middle of rx1's segment.
        spool.append(Array("{\"not\":\"a record\"}\n".utf8), day: day("2026-03-10"), writer: "rx1")
        // L: zeros a power cut left in the middle of rx1's segment (a later page of an unsynced write
        // kept without the earlier one): torn, never corrupt (issue 28).
        spool.append([UInt8](repeating: 0, count: 64) + Array("\"}\n".utf8), day: day("2026-03-10"), writer: "rx1")
        // C: second window, coarse low, decoded through inheritance; G: its development twin (own install date).
        spool.add(record(skan4(source: "37", sequence: 1, coarse: .low), key: "C:1", at: d + "12:00:00.000000Z", writer: "rx1"))
        spool.add(
            record(
                skan4(source: "37", sequence: 1, coarse: .low), key: "G:1", at: d + "12:30:00.000000Z", writer: "rx2",
                environment: .development))
        // D: a winner with its value withheld (null).
        spool.add(record(skan4(source: "237"), key: "D:0", at: d + "13:00:00.000000Z", writer: "rx2"))
        // E: SKAdNetwork 3.0, not winning, campaign id decoded by the map.
        spool.add(
            record(
                Attribution(
                    postbackProtocol: .skadnetwork, version: "3.0", appID: 111, adNetworkID: "net.skadnetwork", campaignID: 5,
                    interaction: .click, didWin: false), key: "E:0", at: d + "14:00:00.000000Z", writer: "rx1"))
        // F: an AdAttributionKit re-engagement with a coarse value.
        spool.add(
            record(
                Attribution(
                    postbackProtocol: .adattributionkit, version: nil, appID: 111, adNetworkID: "net.adattributionkit",
                    sourceIdentifier: "1237", marketplaceID: "com.apple.AppStore", countryCode: "US", interaction: .click,
                    conversionType: .reengagement, postbackSequenceIndex: 0, didWin: true, coarseValue: .high),
                key: "F:0", at: d + "15:00:00.000000Z", writer: "rx1"))
        // I: first received two days earlier: not counted again on the 10th.
        spool.add(record(skan4(source: "99", fine: 0), key: "I:0", at: "2026-03-08T20:00:00.000000Z", writer: "rx1"))
        spool.add(record(skan4(source: "99", fine: 0), key: "I:0", at: d + "16:00:00.000000Z", writer: "rx2"))
        // L: an app without a schema; M: a value the schema does not map; N: installed before the schema.
        spool.add(record(skan4(app: 222, source: "12", fine: 5), key: "L:0", at: d + "17:00:00.000000Z", writer: "rx1"))
        spool.add(
            record(
                skan4(network: "other.skadnetwork", source: "55", fine: 10), key: "M:0", at: d + "18:00:00.000000Z", writer: "rx1"
            ))
        spool.add(record(skan4(source: "37", sequence: 2, coarse: .high), key: "N:2", at: d + "19:00:00.000000Z", writer: "rx1"))
        // P: Apple's own example postback, verified with Apple's production key and stored as the receiver does,
        // with its unsigned country code in lower case (normalized and flagged: counted in flagged_postbacks).
        let body =
            Array(#"{"country-code":"us","#.utf8)
            + (try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json")).dropFirst()
        spool.add(
            SpoolRecord(
                receivedAt: timestamp(d + "20:00:00.000000Z"), writer: "rx1", route: "skadnetwork-developer-copy",
                result: PostbackVerifier().verify(body: body), body: body))
        // J: a torn tail at the end of rx2's segment.
        let torn = record(skan4(source: "12", fine: 1), key: "J:0", at: d + "21:00:00.000000Z", writer: "rx2").encoded()
        spool.append(Array(torn.prefix(torn.count / 2)), day: day("2026-03-10"), writer: "rx2")
        // H: rejected records, one claiming to be app 111's, one unreadable.
        var forged = record(skan4(source: "12", fine: 9), key: "H:0", at: d + "22:00:00.000000Z", writer: "rx1")
        forged.status = .invalidSignature
        forged.reason = "the signature does not verify with apple-skadnetwork-p256"
        spool.add(forged, spool: .rejected)
        spool.add(
            SpoolRecord(
                receivedAt: timestamp(d + "22:30:00.000000Z"), writer: "rx1", route: "ad-network",
                result: PostbackVerifier().verify(body: Array("{oops".utf8)), body: Array("{oops".utf8)), spool: .rejected)
        try spool.write()
    }

    /// One expected row, by column name; absent columns are empty.
    static func line(_ values: [String: String], columns: [String] = AggregateTables.detailColumns) -> String {
        let zeros = [
            "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks", "development_postbacks",
            "rejected_postbacks", "duplicates_dropped", "flagged_postbacks", "conflicting_copies",
        ]
        // The counts of the detail table and its rollups are 0, never empty; the events table has no such default.
        let countsDefaultToZero = columns != AggregateTables.campaignEventsDailyColumns
        return columns.map { column in
            values[column] ?? (countsDefaultToZero && zeros.contains(column) ? "0" : "")
        }.joined(separator: ",")
    }

    static func skanRow(_ values: [String: String]) -> [String: String] {
        [
            "app_id": "111", "protocol": "skadnetwork", "version": "4.0", "ad_network_id": "net.skadnetwork",
            "interaction": "click",
            "conversion_type": "download", "postback_sequence_index": "0", "did_win": "true", "schema_id": "t1",
            "currency": "USD",
            "postbacks": "1",
        ].merging(values) { $1 }
    }

    static let expectedDaily: [String] = [
        // A
        skanRow([
            "est_install_date": "2026-03-06", "source_identifier": "1237", "source_identifier_digits": "4", "campaign": "spring",
            "geo": "3",
            "placement": "feed", "source_app_id": "777", "cv_kind": "fine", "fine_cv": "3", "decoded_label": "rev_2",
            "installs": "1",
            "revenue_min_sum": "5", "revenue_max_sum": "7", "revenue_est_sum": "6", "duplicates_dropped": "1",
        ]),
        // B
        skanRow([
            "est_install_date": "2026-03-06", "source_identifier": "12", "source_identifier_digits": "2", "geo": "1",
            "interaction": "view",
            "conversion_type": "redownload", "cv_kind": "fine", "fine_cv": "63", "decoded_label": "whale", "redownloads": "1",
            "revenue_min_sum": "100", "revenue_est_sum": "150", "duplicates_dropped": "1",
        ]),
        // C
        skanRow([
            "est_install_date": "2026-02-28", "source_identifier": "37", "source_identifier_digits": "2", "geo": "3",
            "placement": "feed",
            "postback_sequence_index": "1", "cv_kind": "coarse", "coarse_cv": "low", "decoded_label": "low1",
            "revenue_min_sum": "0", "revenue_max_sum": "0", "revenue_est_sum": "0",
        ]),
        // G: C's development twin, installed 13.5 minutes before it arrived (Developer Mode's timing)
        skanRow([
            "est_install_date": "2026-03-10", "source_identifier": "37", "source_identifier_digits": "2", "geo": "3",
            "placement": "feed",
            "postback_sequence_index": "1", "cv_kind": "coarse", "coarse_cv": "low", "decoded_label": "low1", "postbacks": "0",
            "revenue_min_sum": "0", "revenue_max_sum": "0", "revenue_est_sum": "0", "development_postbacks": "1",
        ]),
        // D
        skanRow([
            "est_install_date": "2026-03-07", "source_identifier": "237", "source_identifier_digits": "3", "geo": "3",
            "placement": "feed",
            "cv_kind": "null", "decoded_label": "null_cv", "installs": "1", "null_cv_postbacks": "1",
        ]),
        // E
        skanRow([
            "est_install_date": "2026-03-08", "version": "3.0", "campaign_id": "5", "campaign": "old_five", "did_win": "false",
            "cv_kind": "none", "losses": "1",
        ]),
        // F
        skanRow([
            "est_install_date": "2026-03-07", "protocol": "adattributionkit", "version": "",
            "ad_network_id": "net.adattributionkit",
            "source_identifier": "1237", "source_identifier_digits": "4", "marketplace_id": "com.apple.AppStore",
            "country_code": "US",
            "conversion_type": "re-engagement", "cv_kind": "coarse", "coarse_cv": "high", "decoded_label": "high0",
            "reengagements": "1",
            "revenue_min_sum": "10", "revenue_max_sum": "20", "revenue_est_sum": "15",
        ]),
        // L
        skanRow([
            "est_install_date": "2026-03-07", "app_id": "222", "source_identifier": "12", "source_identifier_digits": "2",
            "cv_kind": "fine",
            "fine_cv": "5", "decoded_label": "no_schema", "schema_id": "", "currency": "", "installs": "1",
        ]),
        // M
        skanRow([
            "est_install_date": "2026-03-07", "ad_network_id": "other.skadnetwork", "source_identifier": "55",
            "source_identifier_digits": "2",
            "cv_kind": "fine", "fine_cv": "10", "decoded_label": "undecoded", "installs": "1",
        ]),
        // N
        skanRow([
            "est_install_date": "2026-01-31", "source_identifier": "37", "source_identifier_digits": "2",
            "postback_sequence_index": "2",
            "cv_kind": "coarse", "coarse_cv": "high", "decoded_label": "no_schema", "schema_id": "", "currency": "",
        ]),
        // P
        skanRow([
            "est_install_date": "2026-03-07", "app_id": "525463029", "ad_network_id": "com.example", "source_identifier": "5239",
            "source_identifier_digits": "4", "source_domain": "example.com", "country_code": "US", "cv_kind": "fine",
            "fine_cv": "63",
            "decoded_label": "no_schema", "schema_id": "", "currency": "", "installs": "1", "flagged_postbacks": "1",
        ]),
        // H
        [
            "app_id": "111", "protocol": "skadnetwork", "version": "4.0", "ad_network_id": "net.skadnetwork",
            "rejected_postbacks": "1",
        ],
        ["rejected_postbacks": "1"],
    ].map { line($0) }

    static let expectedEvents: [String] = [
        [
            "est_install_date": "2026-03-06", "source_identifier": "1237", "source_identifier_digits": "4", "campaign": "spring",
            "geo": "3",
            "placement": "feed", "source_app_id": "777", "event_name": "purchase", "postbacks": "1", "event_count_min_sum": "1",
            "revenue_min_sum": "5", "revenue_max_sum": "7", "revenue_est_sum": "6",
        ],
        [
            "est_install_date": "2026-03-06", "source_identifier": "12", "source_identifier_digits": "2", "geo": "1",
            "interaction": "view",
            "conversion_type": "redownload", "event_name": "purchase", "postbacks": "1", "event_count_min_sum": "3",
            "event_count_max_sum": "5",
            "revenue_min_sum": "100", "revenue_est_sum": "150",
        ],
        [
            "est_install_date": "2026-02-28", "source_identifier": "37", "source_identifier_digits": "2", "geo": "3",
            "placement": "feed",
            "postback_sequence_index": "1", "event_name": "session", "postbacks": "1", "event_count_min_sum": "2",
            "revenue_min_sum": "0", "revenue_max_sum": "0", "revenue_est_sum": "0",
        ],
    ].map { values in
        var row = skanRow(values)
        row["postbacks"] = values["postbacks"]
        ["cv_kind", "fine_cv", "coarse_cv", "decoded_label"].forEach { row[$0] = nil }
        return line(row, columns: AggregateTables.campaignEventsDailyColumns)
    }

    static func dataLines(_ text: String) -> [String] {
        Array(text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().filter { !$0.isEmpty }.map(String.init))
    }

    static func bytewiseSorted(_ lines: [String]) -> [String] {
        lines.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    @Test func everyColumnOfASmallSpool() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        let summaries = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-08", to: "2026-03-10")
        #expect(summaries.map(\.day.description) == ["2026-03-08", "2026-03-09", "2026-03-10"])

        let daily = try store.read("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv")
        #expect(daily.hasPrefix(AggregateTables.detailColumns.joined(separator: ",") + "\n"))
        #expect(Self.dataLines(daily) == Self.bytewiseSorted(Self.expectedDaily), "\n\(daily)")
        let events = try store.read("agg/campaign_events_daily/dt=2026-03-10/part-00000.csv")
        #expect(Self.dataLines(events) == Self.bytewiseSorted(Self.expectedEvents), "\n\(events)")

        let totals = try #require(summaries.last).totals
        // A postback is decoded when its row carries a revenue estimate (a schema mapped its value).
        let decoded = CSVText.rows(daily).filter { $0["revenue_est_sum"] != "" }.reduce(0) { $0 + Int($1["postbacks"]!)! }
        #expect(decoded == 4, "A, B, C and F decode; the others are null, unmapped or without a schema")
        #expect(
            totals
                == DayTotals(
                    postbacks: 10, installs: 5, redownloads: 1, reengagements: 1, losses: 1, nullValuePostbacks: 1,
                    developmentPostbacks: 1, rejectedPostbacks: 2, duplicatesDropped: 2, decodedPostbacks: decoded,
                    revenueEstimateByCurrency: ["USD": Money(decimal: "171")!],
                    // Counted rows that no schema decoded, by app (manifest `apps_without_schema`).
                    postbacksWithoutSchema: [111: 1, 222: 1, 525_463_029: 1]))
        let last = try #require(summaries.last)
        #expect(last.sameDayDuplicates == 2 && last.earlierDayDuplicates == 1)
        #expect(last.corruptLines == 1 && last.tornTails == 2, "K corrupt; J and L torn")
        #expect(
            last.problems.first?.hasPrefix("raw/postbacks/dt=2026-03-10/part-rx1-000001.jsonl:3: ") == true, "\(last.problems)")

        // The earlier day counts I once; the empty day still gets (empty) outputs and a manifest.
        #expect(Self.dataLines(try store.read("agg/postback_detail_daily/dt=2026-03-08/part-00000.csv")).count == 1)
        #expect(Self.dataLines(try store.read("agg/postback_detail_daily/dt=2026-03-09/part-00000.csv")).isEmpty)
        #expect(store.exists("agg/_manifests/dt=2026-03-09.json"))
        #expect(!store.exists("agg/_work"), "the work directory is removed")
    }

    /// `campaign_daily_development`: G's row (C's development twin, installed on the day it arrived:
    /// Developer Mode's timing) decoded with its one development postback as `postbacks`, at
    /// `campaign_daily`'s grain; its own development, rejected, duplicate and flagged
    /// counts 0; no other row.
    @Test func developmentTableDecodesTheDevelopmentPostbacks() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-08", to: "2026-03-10")
        let expected =
            Self.line(
                Self.skanRow([
                    "est_install_date": "2026-03-10", "source_identifier": "37", "source_identifier_digits": "2", "geo": "3",
                    "placement": "feed", "postback_sequence_index": "1", "cv_kind": "coarse", "coarse_cv": "low",
                    "decoded_label": "low1", "revenue_min_sum": "0", "revenue_max_sum": "0", "revenue_est_sum": "0",
                ]), columns: AggregateTables.campaignDailyRollup.columns.map(\.name))
            // The model's columns, empty in the development table.
            + String(repeating: ",", count: AggregateTables.modeledColumns.count)
        let development = try store.read("agg/campaign_daily_development/dt=2026-03-10/part-00000.csv")
        #expect(
            development.hasPrefix(
                (AggregateTables.campaignDailyRollup.columns + AggregateTables.modeledColumns).map(\.name)
                    .joined(separator: ",") + "\n"))
        #expect(Self.dataLines(development) == [expected], "\n\(development)")
        for day in ["2026-03-08", "2026-03-09", "2026-03-10"] {
            let daily = CSVText.rows(try store.read("agg/postback_detail_daily/dt=\(day)/part-00000.csv"))
            let rows = CSVText.rows(try store.read("agg/campaign_daily_development/dt=\(day)/part-00000.csv"))
            let sum = { (rows: [[String: String]], column: String) in rows.reduce(0) { $0 + Int($1[column]!)! } }
            #expect(sum(rows, "postbacks") == sum(daily, "development_postbacks"), "\(day)")
            #expect(rows.allSatisfy { $0["development_postbacks"] == "0" && $0["rejected_postbacks"] == "0" }, "\(day)")
        }
        let manifest = try store.read("agg/_manifests/dt=2026-03-10.json")
        #expect(manifest.contains("\"path\":\"agg/campaign_daily_development/dt=2026-03-10/part-00000.csv\""), "\(manifest)")
    }

    @Test func manifestListsInputsOutputsAndCounts() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
        let manifest = try store.bytes("agg/_manifests/dt=2026-03-10.json")
        guard case .object(let object) = try StrictJSONParser.parse(Array(manifest.dropLast())) else {
            Issue.record("not an object")
            return
        }
        #expect(object["dt"] == .string("2026-03-10") && object["tool"] == .string("postback test"))
        guard case .array(let inputs)? = object["inputs"], case .array(let lookback)? = object["lookback_inputs"],
            case .array(let outputs)? = object["outputs"], case .object(let totals)? = object["totals"],
            case .array(let schemas)? = object["schemas"]
        else {
            Issue.record("manifest shape")
            return
        }
        #expect(inputs.count == 3, "two writers' postbacks and one rejected segment")
        #expect(lookback.count == 1, "the 8th's segment was read for its keys")
        for case .object(let input) in inputs + lookback {
            guard case .string(let path)? = input["path"], case .string(let digest)? = input["sha256"] else {
                Issue.record("input entry")
                continue
            }
            #expect(digest == SHA256.hash(try store.bytes(path)).description, "\(path)")
            guard case .number(let bytes)? = input["bytes"] else {
                Issue.record("bytes")
                continue
            }
            #expect(bytes.text == String(try store.bytes(path).count))
        }
        for case .object(let output) in outputs {
            guard case .string(let path)? = output["path"], case .string(let digest)? = output["sha256"] else {
                Issue.record("output entry")
                continue
            }
            #expect(digest == SHA256.hash(try store.bytes(path)).description, "outputs are checksummed: \(path)")
        }
        func number(_ key: String) -> String? {
            if case .number(let n)? = totals[key] { return n.text }
            return nil
        }
        #expect(
            number("postbacks") == "10" && number("duplicates_of_earlier_days") == "1" && number("corrupt_lines") == "1"
                && number("torn_tails") == "2")
        #expect(
            number("rejected_postbacks") == "2" && number("development_postbacks") == "1" && number("decoded_postbacks") == "4")
        guard case .object(let revenue)? = totals["revenue_est_by_currency"] else {
            Issue.record("revenue_est_by_currency")
            return
        }
        #expect(
            revenue.members.map { "\($0.key)=\(String(describing: $0.value))" } == ["USD=number(171)"], "one total per currency")
        #expect(totals["revenue_est_sum"] == nil, "no sum across currencies")
        guard case .number(let segments)? = object["spool_segments"] else {
            Issue.record("spool_segments")
            return
        }
        #expect(segments.text == "2" && object["partial"] == .bool(false))
        #expect(schemas.count == 1)
        #expect(!String(decoding: manifest, as: UTF8.self).contains(store.path), "paths are relative to the store")
    }

    @Test func rerunsAreByteIdenticalAndLeftoversAreCleared() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        let files = [
            "agg/postback_detail_daily/dt=2026-03-10/part-00000.csv", "agg/campaign_events_daily/dt=2026-03-10/part-00000.csv",
            "agg/_manifests/dt=2026-03-10.json", "agg/postback_detail_daily/dt=2026-03-08/part-00000.csv",
            "agg/_manifests/dt=2026-03-08.json",
        ]
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-08", to: "2026-03-10", workers: 2)
        let first = try files.map { try store.bytes($0) }
        // What a crash would leave: a temp file next to an output, and the work directory.
        try store.write("partial", to: "agg/postback_detail_daily/dt=2026-03-10/.part-00000.csv.tmp-424242")
        try store.write("x", to: "agg/_work/day-2026-03-10/w0-b0.bin")
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-08", to: "2026-03-10", workers: 1)
        #expect(try files.map { try store.bytes($0) } == first, "same input, same bytes, whatever the thread count")
        #expect(!store.exists("agg/postback_detail_daily/dt=2026-03-10/.part-00000.csv.tmp-424242"))
        #expect(!store.exists("agg/_work"))
        // A day run on its own gives the same partition as the range run (its lookback reads the 8th).
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
        #expect(try store.bytes(files[0]) == first[0])
    }

    @Test func aFailedRunLeavesThePreviousOutputIntact() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
        let before = try store.bytes("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv")
        let manifest = try store.bytes("agg/_manifests/dt=2026-03-10.json")
        // Make a segment unreadable in the middle of the run (a directory where a file should be).
        let segment = store.path + "/raw/postbacks/dt=2026-03-10/part-rx2-000001.jsonl"
        try FileManager.default.removeItem(atPath: segment)
        try FileManager.default.createDirectory(atPath: segment, withIntermediateDirectories: false)
        #expect(throws: AggregationError.self) {
            try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
        }
        #expect(try store.bytes("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv") == before)
        #expect(try store.bytes("agg/_manifests/dt=2026-03-10.json") == manifest)
    }

    /// A segment whose bytes are not what its writer sealed is refused, named, with the remedy; the
    /// published day stays. A segment without a seal is read as it is, and a rewrite sealed again
    /// (as `reverify` seals what it rewrites) matches its new seal.
    @Test func aSegmentDamagedAfterItWasSealedIsRefused() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        let name = "raw/postbacks/dt=2026-03-10/part-rx2-000001.jsonl"
        let path = store.path + "/" + name
        var bytes = try store.bytes(name)
        let recorder = SegmentSeals.Recorder(root: store.path, spool: .postbacks, writerID: "rx2")
        try recorder.record(path, day: UTCDay("2026-03-10")!, SegmentSeals.seal(of: bytes))
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
        let before = try store.bytes("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv")

        // One digit of the first record's `received_at` changed: still a valid record, counted wrong.
        let digit = try #require(bytes.firstIndex(of: UInt8(ascii: "2")))
        bytes[digit] = UInt8(ascii: "3")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
            Issue.record("a damaged segment was counted")
        } catch let error as AggregationError {
            #expect(error.code == .damagedSegment && error.path == path, "\(error)")
            #expect(error.description.contains("\(path) is damaged"), "\(error)")
            #expect(error.description.contains("Restore the file from the object store's copy"), "\(error)")
        }
        #expect(try store.bytes("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv") == before, "the good output stays")

        try recorder.record(path, day: UTCDay("2026-03-10")!, SegmentSeals.seal(of: bytes))
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")

        // Without a good copy (the documented way forward): damaged again, `postback spool set-aside`
        // moves it out of the spool, kept, and the day is published without it, as if it had never
        // been written (a second store, built the same and the segment deleted by hand).
        bytes[digit] = UInt8(ascii: "4")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let unsealed = store.path + "/raw/postbacks/dt=2026-03-10/part-rx1-000001.jsonl"
        let refused = TestSupport.run(["spool", "set-aside", "--data", store.path, unsealed])
        #expect(refused.status == .usageOrIOError && refused.stderr.contains("\(unsealed) has no seal"), "\(refused.stderr)")
        let moved = TestSupport.run(["spool", "set-aside", "--data", store.path, path])
        #expect(moved.status == .success, "\(moved.stderr)")
        #expect(moved.stdout.contains("--date 2026-03-10"), "\(moved.stdout)")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try store.bytes("raw/_damaged/postbacks/dt=2026-03-10/part-rx2-000001.jsonl") == bytes, "kept, unchanged")
        var request = AggregationRequest(
            dataDirectory: store.path, from: day("2026-03-10"), to: day("2026-03-10"), lookbackDays: 10, workers: 2,
            toolVersion: "postback test")
        request.force = true  // fewer postbacks than the day published before
        _ = try AggregationJob(request: request, catalog: catalog(Self.schema)).run()

        let reference = TemporaryDirectory("reference")
        try Self.buildSpool(root: reference.path)
        try FileManager.default.removeItem(atPath: reference.path + "/" + name)
        request.dataDirectory = reference.path
        _ = try AggregationJob(request: request, catalog: catalog(Self.schema)).run()
        for table in ["postback_detail_daily", "campaign_daily"] {
            let file = "agg/\(table)/dt=2026-03-10/part-00000.csv"
            #expect(try store.bytes(file) == reference.bytes(file), "\(table)")
        }
        #expect(try store.bytes("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv") != before)
        // Matching its seal, a segment stays where it is.
        try SegmentSeals.Recorder(root: store.path, spool: .postbacks, writerID: "rx1").record(
            unsealed, day: UTCDay("2026-03-10")!,
            SegmentSeals.seal(of: try store.bytes("raw/postbacks/dt=2026-03-10/part-rx1-000001.jsonl")))
        let intact = TestSupport.run(["spool", "set-aside", "--data", store.path, unsealed])
        #expect(intact.status == .usageOrIOError && intact.stderr.contains("matches its seal"), "\(intact.stderr)")
        #expect(FileManager.default.fileExists(atPath: unsealed))
    }

    @Test func aPartitionThatCannotBeListedIsAnErrorNotAnEmptyDay() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
        let before = try store.bytes("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv")
        // A file where the day's partition directory should be: opendir fails with ENOTDIR.
        let partition = store.path + "/raw/postbacks/dt=2026-03-10"
        try FileManager.default.removeItem(atPath: partition)
        try Data().write(to: URL(fileURLWithPath: partition))
        do {
            _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", to: "2026-03-10")
            Issue.record("a day whose partition cannot be listed was published")
        } catch let error as AggregationError {
            #expect(error.description.contains("dt=2026-03-10: listing the spool partition failed: Not a directory"), "\(error)")
        }
        #expect(try store.bytes("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv") == before, "the good output stays")
    }

    @Test func aDataDirectoryWithoutASpoolIsRefused() throws {
        let store = TemporaryDirectory()
        do {
            _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10")
            Issue.record("aggregated a directory that holds no spool")
        } catch let error as AggregationError {
            #expect(error.description.contains("holds no spool"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: store.path + "/agg/postback_detail_daily"), "nothing published")
    }

    @Test func aSecondRunOnTheSameStoreIsRefused() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        try FileManager.default.createDirectory(atPath: store.path + "/agg", withIntermediateDirectories: true)
        let holder = try #require(try FileLock(path: store.path + "/agg/.lock"))  // as a running aggregate holds it
        do {
            _ = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10")
            Issue.record("ran while another run held the lock")
        } catch let error as AggregationError {
            #expect(error.code == .locked && error.path?.hasSuffix("/agg/.lock") == true, "\(error)")
        }
        withExtendedLifetime(holder) {}
    }

    @Test func lookbackOfZeroCountsLateCopiesAgain() throws {
        let store = TemporaryDirectory()
        try Self.buildSpool(root: store.path)
        let summaries = try run(store.path, catalog: catalog(Self.schema), from: "2026-03-10", lookback: 0)
        #expect(summaries[0].totals.postbacks == 11 && summaries[0].earlierDayDuplicates == 0)
    }

    @Test func manyPostbacksSpillToManyBucketsWithTheSameResult() throws {
        // Enough records for several buckets; the answer must not depend on bucketing or threads.
        let store = TemporaryDirectory()
        var spool = SyntheticSpool()
        spool.postbacksPerDay = 3000
        spool.duplicateRate = 0.1
        try spool.write(to: StoreLayout(root: store.path), first: day("2026-03-01"), days: 3)
        let summaries = try run(
            store.path, catalog: SchemaCatalog.load(directory: Fixtures.sampleSchemas), from: "2026-03-01", to: "2026-03-03")
        let reference = try store.bytes("agg/postback_detail_daily/dt=2026-03-03/part-00000.csv")
        // Count by hand: distinct verified keys per day, first copy wins, lookback over earlier days.
        var seen: Set<String> = []
        var expected: [Int] = []
        for date in ["2026-03-01", "2026-03-02", "2026-03-03"] {
            var today: Set<String> = []
            var counted = 0
            for entry in spool.lines(day: day(date), first: day("2026-03-01")) where entry.spool == .postbacks {
                let record = try SpoolRecord(line: Array(entry.line.dropLast()))
                guard let key = record.dedupKey, !seen.contains(key), today.insert(key).inserted else { continue }
                if record.environment == .production { counted += 1 }
            }
            seen.formUnion(today)
            expected.append(counted)
        }
        #expect(summaries.map(\.totals.postbacks) == expected)
        let bucketed = AggregationRequest(
            dataDirectory: store.path, from: day("2026-03-03"), to: day("2026-03-03"), workers: 1, toolVersion: "postback test")
        _ = try AggregationJob(request: bucketed, catalog: SchemaCatalog.load(directory: Fixtures.sampleSchemas)).run()
        #expect(try store.bytes("agg/postback_detail_daily/dt=2026-03-03/part-00000.csv") == reference)
    }
}
