package import AggregateSchema
package import Basics

/// One row of spend: what a network says it charged for a campaign on a day (docs/spend.md).
package struct SpendRow: Sendable, Hashable {
    package var date: UTCDay
    package var appID: Int64
    /// Lower-cased (ASCII), as in the published tables.
    package var adNetworkID: String
    /// Exactly one of `campaignID`, `sourceIdentifier` and `campaign` came from the file; `campaign` is
    /// also set when the app's schema names the campaign of the given id.
    package var campaignID: Int64?
    package var sourceIdentifier: String?
    package var campaign: String?
    package var spend: Money
    package var currency: String
    package var impressions: Int64?
    package var clicks: Int64?
    package var reportedInstalls: Int64?

    /// The stored file's columns, in order.
    package static let storedColumns = [
        "date", "app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign", "spend", "currency",
        "impressions", "clicks", "reported_installs",
    ]
    static let campaignColumns = ["campaign_id", "source_identifier", "campaign"]
    static let requiredColumns = ["date", "app_id", "ad_network_id", "spend", "currency"]

    /// The row's stored grain: rows equal in it are added together.
    struct Grain: Hashable {
        var date: UTCDay
        var appID: Int64
        var adNetworkID: String
        var campaignID: Int64?
        var sourceIdentifier: String?
        var campaign: String?
        var currency: String
    }

    var grain: Grain {
        Grain(
            date: date, appID: appID, adNetworkID: adNetworkID, campaignID: campaignID, sourceIdentifier: sourceIdentifier,
            campaign: campaign, currency: currency)
    }

    /// Rows of one grain added together (optional counts stay empty when no row gives them).
    static func merged(_ rows: [SpendRow]) -> [SpendRow] {
        var byGrain: [Grain: SpendRow] = [:]
        var order: [Grain] = []
        for row in rows {
            let grain = row.grain
            guard var sum = byGrain[grain] else {
                byGrain[grain] = row
                order.append(grain)
                continue
            }
            sum.spend.micros += row.spend.micros
            sum.impressions = addOptional(sum.impressions, row.impressions)
            sum.clicks = addOptional(sum.clicks, row.clicks)
            sum.reportedInstalls = addOptional(sum.reportedInstalls, row.reportedInstalls)
            byGrain[grain] = sum
        }
        return order.map { byGrain[$0]! }
    }

    static func addOptional(_ a: Int64?, _ b: Int64?) -> Int64? {
        switch (a, b) {
        case (nil, nil): return nil
        default: return (a ?? 0) + (b ?? 0)
        }
    }

    /// The stored CSV of a day's rows: the header, then the rows' lines sorted by their bytes.
    static func storedCSV(_ rows: [SpendRow]) -> [UInt8] {
        var lines = rows.map { row -> [UInt8] in
            var line = CSVLine()
            line.field(row.date.description)
            line.field(row.appID)
            line.field(row.adNetworkID)
            line.field(row.campaignID)
            line.field(row.sourceIdentifier)
            line.field(row.campaign)
            line.field(row.spend)
            line.field(row.currency)
            line.field(row.impressions)
            line.field(row.clicks)
            line.field(row.reportedInstalls)
            line.endLine()
            return line.array
        }
        lines.sort { $0.lexicographicallyPrecedes($1) }
        return CSVLine.header(storedColumns) + lines.flatMap { $0 }
    }
}

extension SpendRow {
    /// The rows of a stored day file (`SpendStore.dayFile`), which `spend import` wrote and checked.
    package static func readStored(_ bytes: [UInt8], path: String) throws -> [SpendRow] {
        let csv: UserCSV
        do {
            csv = try UserCSV(bytes)
        } catch {
            throw AggregationError.spend(file: path, csv: error)
        }
        guard let header = csv.records.first, header.fields == storedColumns else {
            throw AggregationError.spend(
                "\(path): not a stored spend file (its header is not \(storedColumns.joined(separator: ","))): import the network's file again"
            )
        }
        var rows: [SpendRow] = []
        for record in csv.records.dropFirst() {
            let f = record.fields.map { $0.isEmpty ? nil : $0 }
            guard f.count == storedColumns.count, let date = f[0].flatMap(UTCDay.init), let app = f[1].flatMap({ Int64($0) }),
                let network = f[2], let spend = f[6].flatMap({ Money(decimal: $0) }), let currency = f[7]
            else {
                throw AggregationError.spend("\(path):\(record.line): not a stored spend row: import the network's file again")
            }
            rows.append(
                SpendRow(
                    date: date, appID: app, adNetworkID: network, campaignID: f[3].flatMap { Int64($0) }, sourceIdentifier: f[4],
                    campaign: f[5], spend: spend, currency: currency, impressions: f[8].flatMap { Int64($0) },
                    clicks: f[9].flatMap { Int64($0) }, reportedInstalls: f[10].flatMap { Int64($0) }))
        }
        return rows
    }
}
