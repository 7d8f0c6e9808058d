import AggregateSchema
import Foundation
import TestSupport
import Testing

@testable import Aggregation

/// spark/published-schema.json and spark/published_schema.py are the export of `AggregateSchema`'s
/// declarations that the Spark job, the checks in scripts/ and the benches read; these fail when a
/// checked-in file drifts from them. With POSTBACK_UPDATE_PUBLISHED_SCHEMA=1 a stale file is
/// rewritten (then review and commit it).
@Suite struct PublishedSchemaTests {
    static func check(_ relativePath: String, _ expected: [UInt8]) throws {
        let path = Fixtures.root.appendingPathComponent(relativePath).path
        let stored = FileManager.default.contents(atPath: path).map(Array.init)
        if stored != expected, ProcessInfo.processInfo.environment["POSTBACK_UPDATE_PUBLISHED_SCHEMA"] == "1" {
            try Data(expected).write(to: URL(fileURLWithPath: path))
            return
        }
        // Compared as text, so that a failure shows the lines that differ.
        let storedText = stored.map { String(decoding: $0, as: UTF8.self) } ?? "(no file)"
        #expect(
            storedText == String(decoding: expected, as: UTF8.self),
            "\(relativePath) is stale: run POSTBACK_UPDATE_PUBLISHED_SCHEMA=1 swift test --filter PublishedSchemaTests and commit it"
        )
    }

    @Test func jsonExportIsCurrent() throws {
        try Self.check(PublishedSchemaExport.jsonPath, PublishedSchemaExport.json())
        #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: Data(PublishedSchemaExport.json())) }
    }

    @Test func pythonModuleIsCurrent() throws {
        try Self.check(PublishedSchemaExport.pythonPath, PublishedSchemaExport.python())
    }

    /// The export lists every table a day and a cohort pass publish, each with the columns the
    /// renderer writes (the header of its files).
    @Test func everyPublishedTableIsExported() throws {
        let root = try JSONSerialization.jsonObject(with: Data(PublishedSchemaExport.json())) as? [String: Any]
        guard let tables = root?["tables"] as? [String: Any] else {
            Issue.record("no tables")
            return
        }
        #expect(
            Set(tables.keys)
                == Set([
                    "postback_detail_daily", "campaign_daily", "publisher_daily", "country_daily", "campaign_events_daily",
                    "campaign_daily_development", "campaign_cohort_daily", "campaign_cohort_daily_development",
                ]))
        let detail = (tables["postback_detail_daily"] as? [String: Any])?["columns"] as? [[String: Any]] ?? []
        #expect(detail.compactMap { $0["name"] as? String } == AggregateTables.detailColumns)
    }
}
