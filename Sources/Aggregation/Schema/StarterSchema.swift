import AggregateSchema
package import Basics
import Foundation
import PostbackStore

/// `postback schema init`: a valid schema for a person to fill in. Every fine value (0–63) and
/// every coarse level of every window is listed with a placeholder label and an open revenue range
/// from 0 (`revenue_estimate` `min`): until someone says what a value is worth, the aggregates show
/// it as "at least 0", never as a known 0. The ad networks, source identifiers and campaign ids
/// seen in a store's published `campaign_daily` become source-identifier maps with a placeholder
/// campaign name each.
package enum StarterSchema {
    /// What one ad network sent for the app.
    package struct Network: Sendable, Equatable {
        package var sourceIdentifiers: Set<String> = []
        package var campaignIDs: Set<Int64> = []
    }

    /// The ad networks (lower-cased ids) with the source identifiers and campaign ids that the
    /// published `campaign_daily` and `campaign_daily_development` files of `store` hold for `appID`.
    ///
    /// - Throws: `SchemaError` naming the store or the file that cannot be read.
    package static func networksSeen(store: String, appID: Int64) throws -> [String: Network] {
        let root = StoreLayout(root: store).root
        // Production and development postbacks alike: a team testing with its own keys names its campaigns too.
        let paths = [AggregateTables.campaignDaily, AggregateTables.campaignDailyDevelopment].flatMap { table in
            let directory = "\(root)/agg/\(table)"
            let days = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return days.filter { $0.hasPrefix("dt=") }.sorted().map { "\(directory)/\($0)/part-00000.csv" }
        }
        guard !paths.isEmpty else {
            throw AggregationError.schema(
                file: store,
                problems: [
                    "has no published \(AggregateTables.campaignDaily) (\(root)/agg/\(AggregateTables.campaignDaily)): "
                        + "run 'postback aggregate --data \(store) --date DAY' first (it needs no schema)"
                ])
        }
        var networks: [String: Network] = [:]
        for path in paths {
            guard FileManager.default.fileExists(atPath: path) else { continue }  // a day published as Parquet only
            let records: [UserCSV.Record]
            do {
                records = try UserCSV(FileBytes.read(path: path)).records
            } catch let error as AggregationError where error.code == .malformedCSV {
                throw AggregationError.schema(file: "\(path):\(error.line.map(String.init) ?? "")", problems: [error.reason])
            } catch {
                throw AggregationError.schema(file: path, problems: ["cannot be read: \(error)"])
            }
            guard let header = records.first?.fields else { continue }
            func column(_ name: String) throws -> Int {
                guard let index = header.firstIndex(of: name) else {
                    throw AggregationError.schema(file: path, problems: ["has no \(name) column"])
                }
                return index
            }
            let (app, network, campaign, source) = (
                try column("app_id"), try column("ad_network_id"), try column("campaign_id"), try column("source_identifier")
            )
            for record in records.dropFirst() where record.fields.count == header.count {
                let fields = record.fields
                guard Int64(fields[app]) == appID, !fields[network].isEmpty else { continue }
                if !fields[source].isEmpty {
                    networks[fields[network], default: Network()].sourceIdentifiers.insert(fields[source])
                }
                if let id = Int64(fields[campaign]), (0...100).contains(id) {
                    networks[fields[network], default: Network()].campaignIDs.insert(id)
                }
            }
        }
        return networks
    }

    /// The schema's text, two-space indented, one value a line, so a person can edit it.
    package static func text(appID: Int64, networks: [String: Network]) -> String {
        func quoted(_ text: String) -> String {
            var bytes: [UInt8] = []
            JSONWriter.appendQuoted(text, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        let openRevenue = #""revenue": { "min": 0, "max": null }"#
        func coarse(_ window: Int) -> String {
            ["low", "medium", "high"].map { level in
                #"        "\#(level)": { "label": "w\#(window + 1)_coarse_\#(level)", \#(openRevenue) }"#
            }.joined(separator: ",\n")
        }
        let fine = (0...63).map { value in
            #"          { "value": \#(value), "label": "fine_\#(value)", \#(openRevenue) }"#
        }.joined(separator: ",\n")
        var text = """
            {
              "schema_id": "\(appID)/starter",
              "description": "Written by 'postback schema init': rename each label to what the value means, give its events and its revenue range (amounts in currency), and name the campaigns. Until then every value decodes with revenue of at least 0 and no upper bound.",
              "app_id": \(appID),
              "effective_from": "\(StarterSchemaFile.effectiveFrom)",
              "effective_to": null,
              "currency": "USD",
              "revenue_estimate": "min",
              "windows": {
                "0": {
                  "description": "First postback (days 0-2 after first launch).",
                  "fine": {
                    "unmapped": "undecoded",
                    "entries": [
            \(fine)
                    ]
                  },
                  "coarse": {
            \(coarse(0))
                  }
                },
                "1": {
                  "description": "Second postback (days 3-7).",
                  "coarse": {
            \(coarse(1))
                  }
                },
                "2": {
                  "description": "Third postback (days 8-35).",
                  "coarse": {
            \(coarse(2))
                  }
                }
              }
            """
        let maps = networks.sorted { $0.key < $1.key }.map { network, seen in
            let full = seen.sourceIdentifiers.filter { $0.count == 4 }.sorted()
            let truncated = seen.sourceIdentifiers.filter { $0.count != 4 }.sorted()
            var lines = [
                "      \"ad_network_id\": \(quoted(network))",
                "      \"description\": "
                    + quoted(
                        "Placeholders: each four-digit source identifier seen, as its own campaign. Say which digits mean what (positions 1-4: campaign, geo, placement) and name the campaigns."
                            + (truncated.isEmpty
                                ? "" : " Also seen with fewer digits (truncated by Apple): \(truncated.joined(separator: ", ")).")
                    ),
                "      \"truncation\": \"keeps_trailing\"",
                "      \"digits\": [ { \"positions\": [1, 2, 3, 4], \"dimension\": \"campaign\""
                    + (full.isEmpty
                        ? " } ]"
                        : ", \"values\": {\n"
                            + full.map { "        \(quoted($0)): \(quoted("source_\($0)"))" }.joined(separator: ",\n")
                            + "\n      } } ]"),
            ]
            if !seen.campaignIDs.isEmpty {
                lines.append(
                    "      \"campaign_id_map\": {\n"
                        + seen.campaignIDs.sorted().map { "        \"\($0)\": \"campaign_\($0)\"" }.joined(separator: ",\n")
                        + "\n      }")
            }
            return "    {\n" + lines.joined(separator: ",\n") + "\n    }"
        }
        if !maps.isEmpty {
            text += ",\n  \"source_identifier_map\": [\n" + maps.joined(separator: ",\n") + "\n  ]"
        }
        return text + "\n}\n"
    }
}
