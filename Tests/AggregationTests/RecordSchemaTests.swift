import AggregateSchema
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

    /// The row key copies and lower-cases strings eight bytes at a time; both must agree with a byte
    /// loop for every length (the last word overlaps) and every byte value (UTF-8 left alone).
    @Test func rowKeyStringCopyMatchesByteLoop() {
        let bytes = (0..<256).map { UInt8($0) } + Array("Example.SKAdNetwork-ABCXYZ@[`{".utf8)
        for byte in UInt8.min...UInt8.max {
            let expected = byte &- 0x41 < 26 ? byte | 0x20 : byte
            #expect(UInt8(truncatingIfNeeded: RowKeyEncoder.asciiLowercased(UInt64(byte))) == expected, "\(byte)")
        }
        bytes.withUnsafeBytes { source in
            for start in stride(from: 0, to: bytes.count - 20, by: 7) {
                for count in 0...20 {
                    var buffer = GrowableBuffer<UInt8>(capacity: 16)
                    defer { buffer.free() }
                    buffer.append(0x2A)
                    buffer.appendWords(from: source.baseAddress! + start, count: count, RowKeyEncoder.asciiLowercased)
                    let written = Array(UnsafeBufferPointer(start: buffer.base, count: buffer.count))
                    let expected = [0x2A] + bytes[start..<(start + count)].map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }
                    #expect(written == expected, "start \(start), count \(count)")
                }
            }
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
        fields.setChoice(.postbackProtocol, PostbackProtocol.allCases.firstIndex(of: .adattributionkit))
        fields.set(.version, slice("4.0"))
        fields.set(.appID, 42)
        fields.set(.adNetworkID, slice("Example.SKAdNetwork"))
        fields.set(.sourceIdentifier, slice("5239"))
        fields.set(.sourceAppID, Int64(9))
        fields.set(.countryCode, slice("US"))
        fields.setChoice(.interaction, AdInteraction.allCases.firstIndex(of: .view))
        fields.setChoice(.conversionType, ConversionType.allCases.firstIndex(of: .reengagement))
        fields.set(.sequenceIndex, Int64(2))
        fields.set(.didWin, false)
        fields.set(.fineValue, Int64(17))
        fields.setChoice(.coarseValue, CoarseConversionValue.allCases.firstIndex(of: .medium))
        let encoder = RowKeyEncoder()
        line.withUnsafeBytes { base in
            FieldSlots.reading(fields) { encoder.encodePostback($0, installDay: UTCDay(daysSinceEpoch: 20_000), base: base) }
        }
        let key = encoder.bytes
        // One storage for both views, as the renderer reuses it for every row.
        let storage = RowView.Storage()
        let view = RowView(key: key, storage: storage)
        #expect(view.kind == .postback && view.installDay == UTCDay(daysSinceEpoch: 20_000))
        // Every grain field reads back as written (strings as text, the ad network id lower-cased).
        line.withUnsafeBytes { base in
            for field in RowKeyEncoder.grain {
                let written = Self.describe(field, of: fields, in: base)
                #expect(
                    Self.describe(field, of: view.fields, in: key)
                        == (field == .adNetworkID ? written.lowercased() : written), "\(field)")
            }
        }
        #expect(view.appID == 42 && view.postbackProtocol == .adattributionkit && view.campaignID == nil)
        #expect(view.conversionType == .reengagement && view.sequenceIndex == 2 && view.didWin == false)
        #expect(view.fineValue == 17 && view.coarseValue == .medium)

        encoder.encodeRejected(appID: 5, postbackProtocol: .skadnetwork, version: "9.9", adNetworkID: "ABC")
        let rejected = RowView(key: encoder.bytes, storage: storage)
        #expect(
            rejected.kind == .rejected && rejected.installDay == nil && rejected.appID == 5
                && rejected.postbackProtocol == .skadnetwork)
        #expect(String(decoding: encoder.bytes.slice(rejected.adNetworkID!), as: UTF8.self) == "abc")
        #expect(String(decoding: encoder.bytes.slice(rejected.fields.version!), as: UTF8.self) == "9.9")
        // Everything else is absent: the row claims nothing more.
        for field in RowKeyEncoder.grain where !RowKeyEncoder.rejectedFields.contains(field) {
            #expect(!rejected.fields.has(field), "\(field)")
        }
        withExtendedLifetime(storage) {}
    }

    /// A field's value in `fields`, as text (strings read from `base`).
    static func describe(_ field: AttributionField, of fields: PostbackFields, in base: UnsafeRawBufferPointer) -> String {
        switch field.storage {
        case .slice: return fields.slice(field).map { String(decoding: base.slice($0), as: UTF8.self) } ?? "nil"
        case .integer: return fields.integer(field).map { String($0) } ?? "nil"
        case .boolean: return fields.boolean(field).map { String($0) } ?? "nil"
        case .choice: return fields.choiceText(field) ?? "nil"
        }
    }

    /// The row grain is what the tables show, and the slots have room for every declared field.
    @Test func grainIsEveryShownField() {
        let shown = AggregateTables.detailInOrder.compactMap { column -> AttributionField? in
            if case .field(let field) = column { return field.field } else { return nil }
        }
        #expect(RowKeyEncoder.grain == shown)
        for case .field(let field) in AggregateTables.dimensions + AggregateTables.campaignEventsDailyMeasures {
            #expect(shown.contains(field.field), "\(field) is shown but not in the grain")
        }
        #expect(AttributionField.allCases.count <= PostbackFields.capacity)
        #expect(AttributionField.allCases.map(\.rawValue) == Array(AttributionField.allCases.indices))
    }

    /// Every column a field shows is named by the record's declaration, and no name is used twice.
    @Test func columnsAreNamedOnce() {
        for columns in [AggregateTables.detailColumns, AggregateTables.campaignEventsDailyColumns] {
            #expect(Set(columns).count == columns.count)
        }
        for case .field(let field) in AggregateTables.detailInOrder {
            #expect(field.field.column == field.rawValue, "\(field) is shown but not named as the record declares")
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
