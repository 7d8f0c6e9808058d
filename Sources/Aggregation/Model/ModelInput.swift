import AggregateSchema
import Basics

/// What the model reads of a `campaign_daily` file (CSV or Parquet): per row, its stratum, campaign,
/// counts and estimated revenue, by column name (so files of earlier releases, without the modeled
/// columns, read the same).
struct ModelInputRow {
    var stratum: ModelStratum?
    var campaign: ModelCampaign
    var postbacks: Int64
    var nullValues: Int64
    var revenue: Money?

    /// The row's measured postbacks and their sums; nil when it has none (no revenue, no schema).
    var measured: MeasuredSums? {
        let m = postbacks - nullValues
        guard stratum != nil, let revenue, m > 0 else { return nil }
        return MeasuredSums(measured: m, revenueMicros: revenue.micros)
    }
}

enum ModelInput {
    static let columns = [
        AggregateColumn.field(.appID), .currency, .field(.sequenceIndex), .field(.conversionType), .field(.adNetworkID),
        .field(.sourceIdentifier), .postbacks, .nullValuePostbacks, .revenueEstSum, .field(.campaignID),
    ].map(\.name)

    /// Calls `body` with every row of a `campaign_daily` file, in file order, and the byte range of its
    /// CSV line (without the line end; empty for Parquet).
    static func forEachRow(
        _ bytes: [UInt8], path: String, parquet: Bool, _ body: (ModelInputRow, Range<Int>) throws -> Void
    ) throws {
        if parquet {
            let table: (header: [String], rows: [[String?]])
            do {
                table = try PublishedParquet.textRows(parquet: bytes)
            } catch {
                throw AggregationError.usage(
                    "\(path): not a readable Parquet file (\(error)): rerun 'postback aggregate' for its day")
            }
            let index = try indices(table.header, path: path)
            for (number, record) in table.rows.enumerated() {
                let fields = index.map { record.indices.contains($0) ? record[$0].map { Array($0.utf8) } : nil }
                try body(row({ fields[$0]?[...] }, path: path, line: number + 2), 0..<0)
            }
            return
        }
        var reader = RenderedCSV(bytes)
        guard let header = reader.nextRecord() else { return }
        let index = try indices(header.map { String(decoding: $0 ?? [], as: UTF8.self) }, path: path)
        var ranges: [RenderedCSV.Field] = []
        var scratch: [UInt8] = []
        var line = 1
        var start = reader.position
        while let count = reader.nextFields(into: &ranges) {
            line += 1
            // The fields in place; a quoted one (rare: a comma or quote in an identifier) unescaped.
            let row = try row(
                { column -> ArraySlice<UInt8>? in
                    let position = index[column]
                    guard position < count else { return nil }
                    let field = ranges[position]
                    if field.quoted {
                        reader.unescape(field, into: &scratch)
                        return scratch[...]
                    }
                    return field.range.isEmpty ? nil : bytes[field.range]
                }, path: path, line: line)
            var end = reader.position
            if end > start, bytes[end - 1] == 0x0A { end -= 1 }
            try body(row, start..<end)
            start = reader.position
        }
    }

    private static func indices(_ header: [String], path: String) throws -> [Int] {
        var index: [Int] = []
        for name in columns {
            guard let position = header.firstIndex(of: name) else {
                throw AggregationError.usage(
                    "\(path): has no \(name) column: rerun 'postback aggregate' for its day with this release")
            }
            index.append(position)
        }
        return index
    }

    /// A row from its fields, in `columns`' order (nil: empty).
    private static func row(_ field: (Int) -> ArraySlice<UInt8>?, path: String, line: Int) throws
        -> ModelInputRow
    {
        func text(_ i: Int) -> String { field(i).map { String(decoding: $0, as: UTF8.self) } ?? "" }
        func count(_ i: Int) -> Int64 {
            guard let bytes = field(i), !bytes.isEmpty, bytes.count <= 18 else { return 0 }
            var value: Int64 = 0
            for byte in bytes {
                guard byte >= 0x30, byte <= 0x39 else { return 0 }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        var revenue: Money? = nil
        if let bytes = field(8) {
            guard let amount = Money(decimalUTF8: bytes) else {
                throw AggregationError.usage("\(path): line \(line): revenue_est_sum '\(text(8))' is not an amount")
            }
            revenue = amount
        }
        let currency = text(1)
        // The stratum's window (an empty one, SKAdNetwork ≤ 3.0's single postback: 0) and conversion
        // type (re-engagement, else install: download and redownload pooled).
        let window = text(2)
        let conversionType = text(3) == "re-engagement" ? "re-engagement" : "install"
        return ModelInputRow(
            stratum: currency.isEmpty
                ? nil
                : ModelStratum(
                    appID: text(0), currency: currency, window: window.isEmpty ? "0" : window,
                    conversionType: conversionType),
            campaign: ModelCampaign(adNetworkID: text(4), sourceIdentifier: text(5), campaignID: text(9)),
            postbacks: count(6),
            nullValues: count(7), revenue: revenue)
    }
}

/// The measured sums of one or more days, per stratum and campaign.
package struct ModelSums: Sendable {
    package var strata: [ModelStratum: [ModelCampaign: MeasuredSums]] = [:]

    package init() {}

    package mutating func add(_ stratum: ModelStratum, _ campaign: ModelCampaign, _ sums: MeasuredSums) {
        strata[stratum, default: [:]][campaign, default: MeasuredSums()].add(sums)
    }

    /// Adds another day's sums (exact: the order of days and keys changes nothing).
    package mutating func add(_ other: ModelSums) {
        for (stratum, campaigns) in other.strata {
            if strata[stratum] == nil {
                strata[stratum] = campaigns
                continue
            }
            for (campaign, sums) in campaigns { strata[stratum]![campaign, default: MeasuredSums()].add(sums) }
        }
    }

    /// Takes a day's sums away again (a day leaving the pooling window); units left with nothing go.
    package mutating func subtract(_ other: ModelSums) {
        for (stratum, campaigns) in other.strata {
            for (campaign, sums) in campaigns {
                strata[stratum]![campaign]!.subtract(sums)
                if strata[stratum]![campaign]!.count == 0 { strata[stratum]![campaign] = nil }
            }
            if strata[stratum]!.isEmpty { strata[stratum] = nil }
        }
    }

    /// The sums of a `campaign_daily` file's rows.
    static func of(_ bytes: [UInt8], path: String, parquet: Bool) throws -> ModelSums {
        var sums = ModelSums()
        try ModelInput.forEachRow(bytes, path: path, parquet: parquet) { row, _ in
            if let stratum = row.stratum, let measured = row.measured { sums.add(stratum, row.campaign, measured) }
        }
        return sums
    }

    private static let cacheColumns = [
        "app_id", "currency", "postback_sequence_index", "conversion_type", "ad_network_id", "source_identifier",
        "campaign_id", "measured", "sum_micros", "squares_micros", "zeros",
    ]

    /// As the model's cache keeps it: one sorted CSV line per stratum and campaign, its exact sums.
    var cacheCSV: [UInt8] {
        var lines = CSVLine.header(Self.cacheColumns)
        var line = CSVLine()
        for (stratum, campaigns) in strata.sorted(by: { $0.key < $1.key }) {
            for (campaign, sums) in campaigns.sorted(by: { $0.key < $1.key }) {
                line.reset()
                for text in [
                    stratum.appID, stratum.currency, stratum.window, stratum.conversionType, campaign.adNetworkID,
                    campaign.sourceIdentifier, campaign.campaignID,
                ] {
                    line.field(text)
                }
                line.field(sums.count)
                line.field(sums.sumMicros)
                line.field(String(sums.squaresMicros))
                line.field(sums.zeros)
                line.endLine()
                lines += line.array
            }
        }
        return lines
    }

    init(cacheCSV bytes: [UInt8], path: String) throws {
        var reader = RenderedCSV(bytes)
        guard reader.nextRecord().map({ $0.map { String(decoding: $0 ?? [], as: UTF8.self) } }) == Self.cacheColumns else {
            throw AggregationError.usage("\(path): not the model's cache: delete it and rerun")
        }
        while let record = reader.nextRecord() {
            let text = record.map { String(decoding: $0 ?? [], as: UTF8.self) }
            guard text.count == 11, let count = Int64(text[7]), let sum = Int64(text[8]), let squares = Int128(text[9]),
                let zeros = Int64(text[10])
            else {
                throw AggregationError.usage("\(path): not the model's cache: delete it and rerun")
            }
            add(
                ModelStratum(appID: text[0], currency: text[1], window: text[2], conversionType: text[3]),
                ModelCampaign(adNetworkID: text[4], sourceIdentifier: text[5], campaignID: text[6]),
                MeasuredSums(count: count, sumMicros: sum, squaresMicros: squares, zeros: zeros))
        }
    }
}
