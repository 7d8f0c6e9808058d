import Basics
import Foundation
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Aggregation

/// The record's declaration (`RecordKey`, `AttributionField`) is what the writer, the row key and the
/// Spark job follow: these tests fail when one of them drifts from it.
@Suite struct RecordSchemaTests {
    /// spark/record-schema.json is the export of the declarations; with POSTBACK_UPDATE_RECORD_SCHEMA=1
    /// the test rewrites a stale file (then review and commit it).
    @Test func sparkRecordSchemaIsCurrent() throws {
        let path = Fixtures.root.appendingPathComponent(RecordSchemaExport.path).path
        let expected = RecordSchemaExport.json()
        let stored = FileManager.default.contents(atPath: path).map(Array.init)
        if stored != expected, ProcessInfo.processInfo.environment["POSTBACK_UPDATE_RECORD_SCHEMA"] == "1" {
            try Data(expected).write(to: URL(fileURLWithPath: path))
            return
        }
        // Compared as text, so that a failure shows the lines that differ.
        let storedText = stored.map { String(decoding: $0, as: UTF8.self) } ?? "(no file)"
        #expect(
            storedText == String(decoding: expected, as: UTF8.self),
            "\(RecordSchemaExport.path) is stale: run POSTBACK_UPDATE_RECORD_SCHEMA=1 swift test --filter RecordSchemaTests and commit it"
        )
        // The export is JSON that the Spark job can load.
        #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: Data(expected)) }
    }

    static func record(body: [UInt8], reduced: Bool) -> SpoolRecord {
        let attribution = Attribution(
            postbackProtocol: .skadnetwork, version: "4.0", appID: 1, adNetworkID: "Example.SKAdNetwork",
            sourceIdentifier: "5239",
            sourceAppID: 7, countryCode: "US", interaction: .click, postbackSequenceIndex: 1, didWin: true, coarseValue: .high)
        var record = SpoolRecord(
            receivedAt: UTCTimestamp(microsecondsSinceEpoch: 1_775_000_000_123_456), writer: "rx1", route: "ad-network",
            status: .verified,
            environment: .production, dedupKey: "t:1", postbackProtocol: .skadnetwork, version: "4.0", keyName: "apple",
            reason: "why",
            attribution: attribution, body: body)
        record.client = "127.0.0.1"
        record.quarantine = .unknownKeyID
        record.flags = [PostbackFlag(field: .countryCode, action: .normalized, raw: "\"us\"", note: "upper-cased")]
        if reduced { record.bodyReduction = .init(kept: .prefix, sha256: String(repeating: "0", count: 64), byteCount: 9) }
        return record
    }

    /// A record with every key writes them in declaration order, and the attribution object every field in its order.
    @Test func writerFollowsTheDeclaredOrder() throws {
        for (body, reduced) in [(Array("{}".utf8), true), ([0xFF, 0xFE], false)] {
            let line = Self.record(body: body, reduced: reduced).encoded().dropLast()
            guard case .object(let object) = try StrictJSONParser.parse(Array(line)) else {
                Issue.record("not an object")
                return
            }
            let keys = object.members.map(\.key)
            let declared = RecordKey.allCases.map(\.spoolKey).filter(keys.contains)
            #expect(keys == declared)
            // Every key but one of body/body_base64, and the three body_* keys only for a reduced body.
            #expect(keys.count == RecordKey.allCases.count - (reduced ? 1 : 4), "\(keys)")
            guard case .object(let attribution)? = object[RecordKey.attribution.spoolKey] else {
                Issue.record("no attribution")
                return
            }
            #expect(attribution.members.map(\.key) == AttributionField.allCases.map(\.spoolKey))
            #expect(try SpoolRecord(line: Array(line)) == Self.record(body: body, reduced: reduced))
        }
    }

    /// The row key is written (per postback, unrolled) and read back (`RowView`, by `grain`) alike.
    @Test func rowKeyRoundTrips() {
        let line = Array("\"4.0\"Example.SKAdNetwork\"5239\"US\"".utf8)
        func slice(_ text: String) -> ByteSlice {
            let start = line.indices.first { line[$0...].starts(with: text.utf8) }!
            return ByteSlice(start: start, count: text.utf8.count)
        }
        var fields = PostbackFields()
        fields.postbackProtocol = .adattributionkit
        fields.version = slice("4.0")
        fields.appID = 42
        fields.adNetworkID = slice("Example.SKAdNetwork")
        fields.sourceIdentifier = slice("5239")
        fields.sourceAppID = 9
        fields.countryCode = slice("US")
        fields.interaction = .view
        fields.conversionType = .reengagement
        fields.sequenceIndex = 2
        fields.didWin = false
        fields.fineValue = 17
        fields.coarseValue = .medium
        let encoder = RowKeyEncoder()
        line.withUnsafeBytes { base in encoder.encodePostback(fields, installDay: UTCDay(daysSinceEpoch: 20_000), base: base) }
        let key = encoder.bytes
        let view = RowView(key: key)
        func text(_ slice: ByteSlice?) -> String? { slice.map { String(decoding: key.slice($0), as: UTF8.self) } }
        #expect(view.kind == .postback && view.installDay == UTCDay(daysSinceEpoch: 20_000))
        #expect(view.appID == 42 && view.postbackProtocol == .adattributionkit && text(view.version) == "4.0")
        #expect(
            text(view.adNetworkID) == "example.skadnetwork" && view.campaignID == nil && text(view.sourceIdentifier) == "5239")
        #expect(view.sourceAppID == 9 && view.sourceDomain == nil && view.marketplaceID == nil && text(view.countryCode) == "US")
        #expect(
            view.interaction == .view && view.conversionType == .reengagement && view.sequenceIndex == 2 && view.didWin == false)
        #expect(view.fineValue == 17 && view.coarseValue == .medium)
        #expect(view.kind == .postback && key.count == encoder.bytes.count)

        encoder.encodeRejected(appID: 5, postbackProtocol: .skadnetwork, version: "9.9", adNetworkID: "ABC")
        let rejected = RowView(key: encoder.bytes)
        #expect(
            rejected.kind == .rejected && rejected.installDay == nil && rejected.appID == 5
                && rejected.postbackProtocol == .skadnetwork)
        #expect(String(decoding: encoder.bytes.slice(rejected.adNetworkID!), as: UTF8.self) == "abc")
        #expect(String(decoding: encoder.bytes.slice(rejected.version!), as: UTF8.self) == "9.9")
        #expect(
            rejected.campaignID == nil && rejected.sourceIdentifier == nil && rejected.countryCode == nil
                && rejected.interaction == nil)
        #expect(
            rejected.conversionType == nil && rejected.sequenceIndex == nil && rejected.didWin == nil && rejected.fineValue == nil
        )
        #expect(rejected.coarseValue == nil)
    }

    /// Every column a field shows is named by the record's declaration, and no name is used twice.
    @Test func columnsAreNamedOnce() {
        for columns in [AggregateTables.detailColumns, AggregateTables.campaignEventsDailyColumns] {
            #expect(Set(columns).count == columns.count)
        }
        for case .field(let field) in AggregateTables.detailInOrder {
            #expect(field.column != nil, "\(field) is shown but has no column name")
        }
    }

    /// docs/aggregate.md shows the tables' `CREATE TABLE` statements: they must be the declared ones.
    @Test func documentedColumnTypesAreTheDeclaredOnes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let documentation = try String(contentsOf: root.appendingPathComponent("docs/aggregate.md"), encoding: .utf8)
        let statements = AggregateTables.createTableStatements()
        #expect(
            documentation.contains("```sql\n" + statements + "```"),
            "docs/aggregate.md's Column types block should read:\n\(statements)")
    }
}
