import Foundation
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import PostbackCLI

/// Verified postbacks with a signed value this release does not know, and postbacks it cannot check
/// at all, are kept apart (issue 12): never counted, never folded into known values, and listed in
/// the day's manifest with the value that keeps them out.
@Suite struct QuarantineSummaryTests {
    static func quarantined(
        _ reason: QuarantineReason, key: String?, at time: String, status: VerificationStatus,
        version: String?, flags: [PostbackFlag] = []
    ) -> SpoolRecord {
        var record = SpoolRecord(
            receivedAt: timestamp(time), writer: "rx1", route: "adattributionkit-developer-copy", status: status,
            environment: status == .verified ? .production : nil, dedupKey: key,
            postbackProtocol: version == nil ? .adattributionkit : .skadnetwork, version: version,
            keyName: status == .verified ? "apple-cas-identifier/0" : nil, reason: "quarantined for the test",
            attribution: nil, body: Array("{\"placeholder\":true}".utf8))
        record.quarantine = reason
        record.flags = flags
        return record
    }

    @Test func theManifestListsTheQuarantineAndNothingOfItIsCounted() throws {
        let (store, schemas) = try AggregateCommandTests().scenario()
        var spool = SpoolBuilder(root: store.path)
        let d = "2026-03-10T"
        let newType = PostbackFlag(
            field: .conversionType, action: .unrecognized, raw: "\"re-install\"", note: "unknown conversion type; kept as signed")
        // The same verified postback twice (a retry), and once more with a second new value.
        spool.add(
            Self.quarantined(
                .unrecognizedSignedValue, key: "Q1:0", at: d + "01:00:00.000000Z", status: .verified, version: nil,
                flags: [newType]),
            spool: .unverifiable)
        spool.add(
            Self.quarantined(
                .unrecognizedSignedValue, key: "Q1:0", at: d + "02:00:00.000000Z", status: .verified, version: nil,
                flags: [newType]),
            spool: .unverifiable)
        let newClaim = PostbackFlag(
            field: .jwsClaim, action: .unrecognized, raw: "store-region", note: "unknown claim; kept as signed")
        spool.add(
            Self.quarantined(
                .unrecognizedSignedValue, key: "Q2:0", at: d + "03:00:00.000000Z", status: .verified, version: nil,
                flags: [newType, newClaim]), spool: .unverifiable)
        spool.add(
            Self.quarantined(.unknownVersion, key: nil, at: d + "04:00:00.000000Z", status: .unsupportedVersion, version: "5.0"),
            spool: .unverifiable)
        spool.append(Array("{\"torn".utf8), day: day("2026-03-10"), writer: "rx1", spool: .unverifiable)
        try spool.write()

        let before = try store.bytes("raw/postbacks/dt=2026-03-10/part-rx1-000001.jsonl")
        let run = TestSupport.run([
            "aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-10", "--json",
        ])
        #expect(run.status != .usageOrIOError, "\(run.stderr)")
        #expect(run.stdout.contains("\"quarantined_postbacks\":4"), "\(run.stdout)")

        guard
            case .object(let manifest) = try StrictJSONParser.parse(
                Array(try store.bytes("agg/_manifests/dt=2026-03-10.json").dropLast())),
            case .array(let rows)? = manifest["quarantined"], case .object(let totals)? = manifest["totals"]
        else {
            Issue.record("manifest")
            return
        }
        var listed: [String: String] = [:]
        for case .object(let row) in rows {
            guard case .string(let field)? = row["field"], case .string(let raw)? = row["raw"],
                case .number(let count)? = row["postbacks"],
                case .string(let reason)? = row["quarantine"]
            else { continue }
            listed["\(reason) \(field) \(raw)"] = count.text
        }
        #expect(
            listed == [
                "unrecognized-signed-value conversion-type \"re-install\"": "2",
                "unrecognized-signed-value jws-claim store-region": "1",
                "unknown-version version 5.0": "1",
            ], "a retry counts once; each unknown value has its own row: \(listed)")
        #expect(manifest["quarantine_unreadable_lines"] == .number(try #require(Self.number("1"))))
        // The headline is the same as without the quarantine: nothing of it is counted.
        let withoutQuarantine = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: withoutQuarantine.path + "/raw", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: store.path + "/raw/postbacks", toPath: withoutQuarantine.path + "/raw/postbacks")
        try FileManager.default.copyItem(atPath: store.path + "/raw/rejected", toPath: withoutQuarantine.path + "/raw/rejected")
        _ = TestSupport.run(["aggregate", "--data", withoutQuarantine.path, "--schemas", schemas.path, "--date", "2026-03-10"])
        #expect(
            try store.read("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv")
                == (try withoutQuarantine.read("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv")))
        guard
            case .object(let plainTotals)? =
                (try StrictJSONParser.parse(Array(try withoutQuarantine.bytes("agg/_manifests/dt=2026-03-10.json").dropLast())))
                .objectValue?["totals"]
        else {
            Issue.record("totals")
            return
        }
        #expect(totals == plainTotals)
        #expect(try store.bytes("raw/postbacks/dt=2026-03-10/part-rx1-000001.jsonl") == before, "the spool is only read")

        // The report lists them apart from the headline.
        let page = TestSupport.run(["report", "--data", store.path, "--date", "2026-03-10", "--out", "-"])
        #expect(page.status != .usageOrIOError, "\(page.stderr)")
        let table = try #require(
            page.stdout.range(of: "<table id=\"table-quarantined\">").map { String(page.stdout[$0.lowerBound...].prefix(2000)) })
        #expect(
            table.contains("conversion-type") && table.contains("&quot;re-install&quot;") && table.contains("store-region"),
            "\(table)")
    }

    /// Issue 24 item 4: a quarantined body without a dedup key (an unknown version) is counted once
    /// per body, as the receiver stores it once; another body is another postback.
    @Test func aRetriedBodyWithoutADedupKeyCountsOnce() throws {
        let (store, schemas) = try AggregateCommandTests().scenario()
        var spool = SpoolBuilder(root: store.path)
        let d = "2026-03-10T"
        for (time, body) in [
            ("04:00:00", "{\"version\":\"5.0\",\"n\":1}"), ("05:00:00", "{\"version\":\"5.0\",\"n\":1}"),
            ("06:00:00", "{\"version\":\"5.0\",\"n\":2}"),
        ] {
            var record = Self.quarantined(
                .unknownVersion, key: nil, at: d + time + ".000000Z", status: .unsupportedVersion, version: "5.0")
            record.body = Array(body.utf8)
            spool.add(record, spool: .unverifiable)
        }
        try spool.write()
        let run = TestSupport.run(["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-10"])
        #expect(run.status != .usageOrIOError, "\(run.stderr)")
        guard
            case .object(let manifest) = try StrictJSONParser.parse(
                Array(try store.bytes("agg/_manifests/dt=2026-03-10.json").dropLast())),
            case .array(let rows)? = manifest["quarantined"]
        else {
            Issue.record("manifest")
            return
        }
        var counts: [String] = []
        for case .object(let row) in rows {
            if case .number(let count)? = row["postbacks"] { counts.append(count.text) }
        }
        #expect(counts == ["2"], "the retried body once, the other body once: \(counts)")
    }

    static func number(_ text: String) -> JSONNumber? {
        guard case .number(let number)? = try? StrictJSONParser.parse(Array(text.utf8)) else { return nil }
        return number
    }
}

extension JSONValue {
    var objectValue: JSONObject? { if case .object(let object) = self { return object } else { return nil } }
}
