import AggregateSchema
import Postbacks

/// A schema catalog flattened into plain tables: the decoding rules as data, so that any engine
/// (the Spark job, a DuckDB query, a test) decodes postbacks with joins instead of a second
/// hand-written decoder. `postback schema export` writes these.
///
/// - `values`: one row per schema × protocol × conversion type × window × conversion value, for
///   every possible value (fine 0–63 in each window, coarse low/medium/high in each window), with the
///   label, revenue range and `mapped` false for values the schema leaves undecoded. Join on
///   `app_id`, `protocol`, `conversion_type`, `postback_sequence_index`, `cv_kind`, `cv_value` and
///   `effective_from <= est_install_date <= coalesce(effective_to, '9999-12-31')`.
/// - `events`: the events each mapped value implies (join on `schema_id`, window, kind, value).
/// - `sources`: every source identifier (2, 3 and 4 digits) and SKAdNetwork campaign id an ad
///   network's map decodes, with its campaign, geo and placement.
package enum DecodeTable {
    package enum Table: String, Sendable, CaseIterable {
        case values, events, sources
    }

    package static func columns(_ table: Table) -> [String] {
        switch table {
        case .values:
            return [
                "schema_id", "app_id", "effective_from", "effective_to", "protocol", "conversion_type", "postback_sequence_index",
                "cv_kind", "cv_value", "mapped", "decoded_label", "revenue_min", "revenue_max", "revenue_est", "currency",
            ]
        case .events:
            return ["schema_id", "postback_sequence_index", "cv_kind", "cv_value", "event_name", "min_count", "max_count"]
        case .sources:
            return [
                "schema_id", "app_id", "ad_network_id", "valid_from", "valid_to", "id_kind", "id_value", "campaign", "geo",
                "placement",
            ]
        }
    }

    /// The table as CSV with a header row (same conventions as the aggregate tables).
    package static func csv(_ catalog: SchemaCatalog, table: Table) -> [UInt8] {
        var out = CSVLine.header(columns(table))
        var line = CSVLine()
        func emit(_ fill: (inout CSVLine) -> Void) {
            line.reset()
            fill(&line)
            line.endLine()
            out.append(contentsOf: line.bytes)
        }
        for schema in catalog.schemas {
            switch table {
            case .values:
                for postbackProtocol in schema.protocols {
                    for conversionType in schema.conversionTypes {
                        for (window, kind, value, decoding) in decodings(schema) {
                            emit { line in
                                line.field(schema.schemaID)
                                line.field(schema.appID)
                                line.field(schema.effectiveFrom.description)
                                line.field(schema.effectiveTo?.description)
                                line.field(postbackProtocol.rawValue)
                                line.field(conversionType.rawValue)
                                line.field(window)
                                line.field(kind)
                                line.field(value)
                                switch decoding {
                                case .decoded(let decoded):
                                    line.field(true)
                                    line.field(decoded.label)
                                    line.field(decoded.revenue.min)
                                    line.field(decoded.revenue.max)
                                    line.field(decoded.revenue.estimate)
                                case .unmapped(let label):
                                    line.field(false)
                                    line.field(label)
                                    line.field(Money?.none)
                                    line.field(Money?.none)
                                    line.field(Money?.none)
                                }
                                line.field(schema.currency)
                            }
                        }
                    }
                }
            case .events:
                for (window, kind, value, decoding) in decodings(schema) {
                    guard case .decoded(let decoded) = decoding else { continue }
                    for event in decoded.events {
                        emit { line in
                            line.field(schema.schemaID)
                            line.field(window)
                            line.field(kind)
                            line.field(value)
                            line.field(event.name)
                            line.field(event.minCount)
                            line.field(event.maxCount)
                        }
                    }
                }
            case .sources:
                for map in schema.sourceIdentifierMaps {
                    func row(_ kind: String, _ value: String, _ dimensions: DecodedDimensions) {
                        guard dimensions != DecodedDimensions() else { return }
                        emit { line in
                            line.field(schema.schemaID)
                            line.field(schema.appID)
                            line.field(map.adNetworkID)
                            line.field(map.validFrom?.description)
                            line.field(map.validTo?.description)
                            line.field(kind)
                            line.field(value)
                            line.field(dimensions.campaign)
                            line.field(dimensions.geo)
                            line.field(dimensions.placement)
                        }
                    }
                    for digits in 2...4 {
                        let limit = [1, 10, 100, 1000, 10000][digits]
                        for number in 0..<limit {
                            let text = String(number)
                            let identifier = String(repeating: "0", count: digits - text.count) + text
                            row("source_identifier", identifier, map.dimensions(sourceIdentifier: identifier))
                        }
                    }
                    for id in map.campaignIDs.keys.sorted() { row("campaign_id", String(id), map.dimensions(campaignID: id)) }
                }
            }
        }
        return out
    }

    /// Every (window, kind, value) with its decoding, fine values first.
    static func decodings(_ schema: ConversionSchema) -> [(Int, String, String, ValueDecoding)] {
        var result: [(Int, String, String, ValueDecoding)] = []
        for window in 0..<3 {
            for value in 0..<64 { result.append((window, "fine", String(value), schema.decode(fine: value, window: window))) }
            for coarse in CoarseConversionValue.allCases {
                result.append((window, "coarse", coarse.rawValue, schema.decode(coarse: coarse, window: window)))
            }
        }
        return result
    }
}
