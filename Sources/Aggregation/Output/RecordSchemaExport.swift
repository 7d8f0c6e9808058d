import AggregateSchema
import Basics
import PostbackStore
import Postbacks

/// The record and table declarations as JSON, for the engines that are not Swift: the Spark job
/// reads `spark/record-schema.json`, which is this text (a test fails when the file is stale, and
/// rewrites it with `POSTBACK_UPDATE_RECORD_SCHEMA=1`). One member per line, so a change reads
/// well in a diff.
package enum RecordSchemaExport {
    package static let path = "spark/record-schema.json"

    package static func json() -> [UInt8] {
        var lines: [String] = []
        func member(_ name: String, _ write: (inout JSONWriter) -> Void) {
            var json = JSONWriter()
            write(&json)
            var text = [UInt8]()
            JSONWriter.appendQuoted(name, to: &text)
            lines.append("  " + String(decoding: text, as: UTF8.self) + ": " + String(decoding: json.bytes, as: UTF8.self))
        }
        func strings(_ name: String, _ values: [String]) {
            member(name) { json in
                json.beginArray()
                for value in values { json.value(value) }
                json.endArray()
            }
        }
        member("generated_from") {
            $0.value(
                "PostbackStore/RecordFields.swift, AggregateSchema/AggregateTables.swift; do not edit (swift test regenerates it with POSTBACK_UPDATE_RECORD_SCHEMA=1)"
            )
        }
        member("record_format") { $0.value(SpoolRecord.currentFormat) }
        func objects<Item>(_ name: String, _ items: [Item], _ write: @escaping (Item, inout JSONWriter) -> Void) {
            member(name) { json in
                json.beginArray()
                for item in items {
                    json.beginObject()
                    write(item, &json)
                    json.endObject()
                }
                json.endArray()
            }
        }
        objects("record_keys", RecordKey.allCases) { key, json in
            json.field("key", key.spoolKey)
            json.field("type", key.valueType.rawValue)
            json.field("since_format", key.sinceFormat)
        }
        objects("attribution_fields", AttributionField.allCases) { field, json in
            json.field("key", field.spoolKey)
            json.field("type", field.valueType.rawValue)
            json.field("required", field.isRequired)
            json.key("choices")
            if let choices = field.choices {
                json.beginArray()
                for choice in choices { json.value(choice) }
                json.endArray()
            } else {
                json.value(String?.none)
            }
            json.field("column", field.column)
            json.field("signed", field.isSigned)
            json.field("carried_by", field.carriedBy)
        }
        strings("row_grain", RowKeyEncoder.grain.map(\.spoolKey))
        strings("rejected_row_fields", RowKeyEncoder.grain.filter(RowKeyEncoder.rejectedFields.contains).map(\.spoolKey))
        strings("tables", AggregateTables.all)
        strings("dimension_columns", AggregateTables.dimensionColumns)
        strings("detail_columns", AggregateTables.detailColumns)
        strings("campaign_events_daily_columns", AggregateTables.campaignEventsDailyColumns)
        // Each rollup's group-by columns and its measured columns (kept + measures, in detail order); the
        // tables of `modeled_tables` append `modeled_columns` after them (docs/modeling.md).
        objects("rollups", AggregateTables.rollups) { rollup, json in
            json.field("table", rollup.table)
            for (name, columns) in [("kept", rollup.kept), ("columns", rollup.columns)] {
                json.key(name)
                json.beginArray()
                for column in columns { json.value(column.name) }
                json.endArray()
            }
        }
        member("development_rollup") { $0.value(AggregateTables.campaignDailyRollup.table) }
        strings("modeled_tables", [AggregateTables.campaignDaily, AggregateTables.campaignDailyDevelopment])
        strings("modeled_columns", AggregateTables.modeledColumns.map(\.name))
        member("column_types") { json in
            json.beginObject()
            var seen = Set<String>()
            for column in AggregateTables.detailInOrder + AggregateTables.campaignEventsDailyMeasures
                + AggregateTables.modeledColumns
            where seen.insert(column.name).inserted {
                json.field(column.name, column.sqlType)
            }
            json.endObject()
        }
        strings("postback_count_columns", AggregateTables.detailInOrder.filter(\.isPostbackCount).map(\.name))
        strings("money_columns", AggregateTables.detailInOrder.filter(\.isMoney).map(\.name))
        strings("versions_with_conversion_windows", SKAdNetworkVersion.allCases.filter(\.hasConversionWindows).map(\.rawValue))
        return Array(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }
}
