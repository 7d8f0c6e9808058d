import AggregateSchema
package import Basics
import Postbacks

/// Reads a spend file as a network exports it (docs/spend.md, "The spend file") into rows, or says
/// at `FILE:LINE:COLUMN` what is wrong and how to fix it. Nothing is half-read: the first bad row
/// stops the file.
package enum SpendFile {
    static let optionalCountColumns = ["impressions", "clicks", "reported_installs"]
    static let knownColumns = SpendRow.requiredColumns + SpendRow.campaignColumns + optionalCountColumns

    /// - Parameter catalog: the schemas that name campaigns; nil when none were given (a `campaign`
    ///   name is then refused, and ids stay as they are).
    package static func rows(_ bytes: [UInt8], name: String, catalog: SchemaCatalog?) throws -> [SpendRow] {
        let csv: UserCSV
        do {
            csv = try UserCSV(bytes)
        } catch {
            throw AggregationError.spend(file: name, csv: error)
        }
        guard let header = csv.records.first else {
            throw AggregationError.spend("\(name): is empty: a spend file starts with a header row (\(example))")
        }
        var columnIndex: [String: Int] = [:]
        for (index, raw) in header.fields.enumerated() {
            let column = raw.trimmingASCIISpaces
            guard knownColumns.contains(column) else {
                let hint = Suggestion.closest(to: column, in: knownColumns).map { ": did you mean '\($0)'?" } ?? ""
                throw AggregationError.spend(
                    "\(name):\(header.line):\(index + 1): unknown column '\(column)'\(hint) (columns: \(knownColumns.joined(separator: ", ")))"
                )
            }
            guard columnIndex[column] == nil else {
                throw AggregationError.spend("\(name):\(header.line):\(index + 1): column '\(column)' appears twice")
            }
            columnIndex[column] = index
        }
        for column in SpendRow.requiredColumns where columnIndex[column] == nil {
            throw AggregationError.spend("\(name):\(header.line): no '\(column)' column: a spend file needs \(example)")
        }
        guard SpendRow.campaignColumns.contains(where: { columnIndex[$0] != nil }) else {
            throw AggregationError.spend(
                "\(name):\(header.line): no campaign column: add campaign_id (SKAdNetwork 1.0-3.0), source_identifier (4.0, AdAttributionKit) or campaign (a name of the app's schema)"
            )
        }
        guard csv.records.count > 1 else { throw AggregationError.spend("\(name): holds a header but no spend row") }

        var rows: [SpendRow] = []
        rows.reserveCapacity(csv.records.count - 1)
        for record in csv.records.dropFirst() {
            guard record.fields.count == header.fields.count else {
                throw AggregationError.spend(
                    "\(name):\(record.line): \(record.fields.count) fields where the header has \(header.fields.count): quote a field that holds a comma"
                )
            }
            rows.append(try row(record, columns: columnIndex, name: name, catalog: catalog))
        }
        return rows
    }

    static let example = "date, app_id, ad_network_id, campaign_id | source_identifier | campaign, spend, currency"

    private static func row(_ record: UserCSV.Record, columns: [String: Int], name: String, catalog: SchemaCatalog?)
        throws -> SpendRow
    {
        func text(_ column: String) -> String? {
            guard let index = columns[column] else { return nil }
            let value = record.fields[index].trimmingASCIISpaces
            return value.isEmpty ? nil : value
        }
        func fail(_ column: String, _ problem: String) -> AggregationError {
            AggregationError.spend("\(name):\(record.line):\((columns[column] ?? 0) + 1): \(problem)")
        }
        func required(_ column: String) throws -> String {
            guard let value = text(column) else { throw fail(column, "\(column) is empty: every row needs one") }
            return value
        }
        func count(_ column: String) throws -> Int64? {
            guard let value = text(column) else { return nil }
            guard let number = nonNegativeInteger(value) else {
                throw fail(column, "\(column) '\(value)' is not a whole number of 0 or more")
            }
            return number
        }

        let dateText = try required("date")
        guard let date = UTCDay(dateText) else {
            throw fail("date", "date '\(dateText)' is not a day: write it YYYY-MM-DD (the UTC day of the spend)")
        }
        let appText = try required("app_id")
        guard let appID = nonNegativeInteger(appText), appID > 0 else {
            throw fail("app_id", "app_id '\(appText)' is not an app id: the App Store id, a positive whole number")
        }
        let network = try required("ad_network_id").asciiLowercased
        guard network.utf8.count <= 200, network.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") })
        else {
            throw fail("ad_network_id", "ad_network_id '\(network)' is not an ad network id (e.g. example123.skadnetwork)")
        }
        let given = SpendRow.campaignColumns.filter { text($0) != nil }
        guard given.count == 1 else {
            let column = given.count > 1 ? given[1] : SpendRow.campaignColumns.first { columns[$0] != nil }!
            throw fail(
                column,
                given.isEmpty
                    ? "no campaign: fill exactly one of campaign_id, source_identifier and campaign"
                    : "both \(given[0]) and \(given[1]) are given: fill exactly one of campaign_id, source_identifier and campaign"
            )
        }
        var row = SpendRow(
            date: date, appID: appID, adNetworkID: network, spend: .zero, currency: "",
            impressions: try count("impressions"), clicks: try count("clicks"),
            reportedInstalls: try count("reported_installs"))
        let maps = catalog.map { campaignMaps($0, appID: appID, network: network, day: date) } ?? []
        switch given[0] {
        case "campaign_id":
            let value = text("campaign_id")!
            guard let id = nonNegativeInteger(value), id <= 100 else {
                throw fail("campaign_id", "campaign_id '\(value)' is not a SKAdNetwork campaign id (0-100)")
            }
            row.campaignID = id
            row.campaign = maps.lazy.compactMap { $0.dimensions(campaignID: id).campaign }.first
        case "source_identifier":
            let value = text("source_identifier")!
            guard (2...4).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw fail("source_identifier", "source_identifier '\(value)' is not 2-4 digits (as the network reports it)")
            }
            row.sourceIdentifier = value
            row.campaign = maps.lazy.compactMap { $0.dimensions(sourceIdentifier: value).campaign }.first
        default:
            let value = text("campaign")!
            guard let catalog else {
                throw fail(
                    "campaign", "campaign '\(value)' is a name: give --schemas DIR so it can be checked against the app's schema")
            }
            let known = campaignNames(maps)
            guard known.names.contains(value) || known.anyDigits else {
                let hint = Suggestion.closest(to: value, in: known.names).map { " (did you mean '\($0)'?)" } ?? ""
                let schemas = catalog.schemas.contains { $0.appID == appID } ? "" : ": no schema for app \(appID)"
                throw fail(
                    "campaign",
                    "campaign '\(value)' is not a campaign of app \(appID)'s schema for \(network) on \(date)\(hint)\(schemas); name it as the schema's source_identifier_map does, or give its campaign_id or source_identifier"
                )
            }
            row.campaign = value
        }
        let spendText = try required("spend")
        guard let spend = Money(decimal: spendText) else {
            throw fail(
                "spend",
                spendText.hasPrefix("-")
                    ? "spend '\(spendText)' is negative: spend is an amount spent, 0 or more"
                    : "spend '\(spendText)' is not a decimal amount (digits, one '.', at most six decimals, no exponent or thousands separator)"
            )
        }
        row.spend = spend
        let currency = try required("currency")
        guard CurrencyCode.isKnown(currency) else {
            let upper = currency.uppercased()
            throw fail(
                "currency",
                CurrencyCode.isKnown(upper)
                    ? "currency '\(currency)' must be written in capitals: '\(upper)'"
                    : "currency '\(currency)' is not an ISO 4217 code (e.g. EUR, USD, GBP)")
        }
        row.currency = currency
        return row
    }

    /// The source-identifier maps of `network` in the app's schemas live on `day`.
    static func campaignMaps(_ catalog: SchemaCatalog, appID: Int64, network: String, day: UTCDay) -> [SourceIdentifierMap] {
        catalog.schemas.filter { $0.appID == appID && $0.covers(day) }.compactMap {
            $0.sourceIdentifierMap(adNetworkID: network, day: day)
        }
    }

    /// Every campaign name the maps can decode to; `anyDigits` when a map's campaign digits have no
    /// names (the digits themselves are the name).
    static func campaignNames(_ maps: [SourceIdentifierMap]) -> (names: [String], anyDigits: Bool) {
        var names = Set<String>()
        var anyDigits = false
        for map in maps {
            names.formUnion(map.campaignIDs.values)
            for group in map.groups where group.dimension == .campaign {
                if let values = group.values { names.formUnion(values.values) } else { anyDigits = true }
            }
        }
        return (names.sorted(), anyDigits)
    }

    static func nonNegativeInteger(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}

extension String {
    var trimmingASCIISpaces: String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
