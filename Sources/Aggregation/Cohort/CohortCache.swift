import AggregateSchema
import Basics
import Foundation
import PostbackCrypto

/// A published `campaign_daily` file summed to what the cohorts use (install date, cohort key,
/// window, currency), kept in `DATA/cache/cohorts-2/TABLE/dt=DAY-SHA256.csv`: the nightly run reads some
/// 40 days of `campaign_daily`, and this is a fifth of their rows and half their columns. It is named by
/// the file's SHA-256 as its manifest lists it, so a republished day never meets a stale sum; a missing
/// or unreadable cache entry is made again from the file (checked against that SHA-256). Not part of
/// the published data: deleting `DATA/cache` only costs time. The null-value model keeps its pooling
/// window's sums the same way (`cached(kind: "model-2", …)`: the sums of `null-eb-2`).
enum CohortCache {
    static func path(root: String, kind: String = "cohorts-2", table: String, day: UTCDay, sha256: String) -> String {
        "\(root)/cache/\(kind)/\(table)/dt=\(day)-\(sha256).csv"
    }

    static func rows(root: String, table: String, day: UTCDay, file: (path: String, bytes: Int, sha256: String))
        throws -> CampaignDailyRows
    {
        // "cohorts-2": the sums with the model's columns (a cache of an earlier release is not read).
        let (bytes, path) = try cached(kind: "cohorts-2", root: root, table: table, day: day, file: file) {
            (bytes, path) in
            try sum(CampaignDailyRows(bytes: bytes, path: path, parquet: path.hasSuffix(".parquet")))
        }
        return try CampaignDailyRows(bytes: bytes, path: path, parquet: false)
    }

    /// A published file's summary (CSV) from `DATA/cache/KIND/TABLE/dt=DAY-SHA256.csv`, or made by
    /// `summarize` from the file (checked against the SHA-256 its manifest lists) and cached; with the
    /// path it was read from.
    static func cached(
        kind: String, root: String, table: String, day: UTCDay, file: (path: String, bytes: Int, sha256: String),
        summarize: ([UInt8], String) throws -> [UInt8]
    ) throws -> (bytes: [UInt8], path: String) {
        let cached = path(root: root, kind: kind, table: table, day: day, sha256: file.sha256)
        if let bytes = try? FileBytes.read(path: cached, limit: 1 << 34) {
            return (bytes, cached)
        }
        let summed = try summarize(try published(root: root, day: day, file: file), file.path)
        // Best effort: a cache that cannot be written is made again next time.
        let directory = String(cached[..<cached.lastIndex(of: "/")!])
        if (try? DurableFile.makeDirectories(directory)) != nil {
            for old in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where old.hasPrefix("dt=\(day)-") {
                unlink("\(directory)/\(old)")
            }
            try? DurableFile.write(summed, to: cached)
        }
        return (summed, cached)
    }

    /// A published file's bytes, checked against the SHA-256 its day's manifest lists.
    static func published(root: String, day: UTCDay, file: (path: String, bytes: Int, sha256: String))
        throws -> [UInt8]
    {
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(path: root + "/" + file.path, limit: 1 << 34)
        } catch {
            throw AggregationError.usage(
                "\(root)/\(file.path): cannot read it (\(error.message)): rerun 'postback aggregate' for \(day)")
        }
        guard SHA256.hash(bytes).description == file.sha256 else {
            throw AggregationError.usage(
                "\(root)/\(file.path) is not the file its manifest lists (SHA-256 differs): rerun 'postback aggregate' for \(day) to publish it again"
            )
        }
        return bytes
    }

    /// The rows of counted postbacks, summed by install date, key, window and currency, as CSV with
    /// `CampaignDailyRows.columns` (amounts summed as SQL SUM: empty when every value is).
    private static func sum(_ rows: CampaignDailyRows) throws -> [UInt8] {
        struct Group: Hashable {
            var day: UTCDay
            var key: CohortKey
            var window: Int
            var currency: String?
            var conversionType: String?
            var sourceIdentifier: String?
            var campaignID: Int64?
        }
        var groups: [Group: (counts: [Int64], revenue: [AmountSum], modeled: ModeledParts)] = [:]
        try rows.forEach(wanted: { _ in true }) { row in
            guard row.postbacks > 0 else { return }
            let group = Group(
                day: row.installDay, key: row.key, window: row.sequenceIndex, currency: row.currency,
                conversionType: row.conversionType, sourceIdentifier: row.sourceIdentifier, campaignID: row.campaignID)
            var entry = groups[group] ?? ([0, 0, 0, 0, 0, 0], [AmountSum(), AmountSum(), AmountSum()], ModeledParts.none)
            for (index, value) in [row.postbacks, row.installs, row.redownloads, row.reengagements, row.losses, row.nullValues]
                .enumerated()
            {
                entry.counts[index] += value
            }
            entry.revenue[0].add(row.revenueMin)
            entry.revenue[1].add(row.revenueMax)
            entry.revenue[2].add(row.revenueEstimate)
            entry.modeled.add(row.modeled)
            groups[group] = entry
        }
        var lines: [[UInt8]] = []
        for (group, entry) in groups {
            var line = CSVLine()
            line.field(group.day.description)
            line.field(group.key.appID)
            line.field(group.key.adNetworkID)
            line.field(group.campaignID)  // the row's own (the key drops it for a named campaign)
            line.field(group.sourceIdentifier)
            line.field(group.key.campaign)
            line.field(group.window)
            for count in entry.counts { line.field(count) }
            for amount in entry.revenue { line.field(amount.value) }
            line.field(group.currency)
            line.field(group.conversionType)
            for column in ModeledColumn.allCases {
                switch column.total {
                case .summedAmount: line.field(entry.modeled.estimate)
                case .interval, .measuredPlusModeled: line.field(nil as String?)
                case .summed: line.field(entry.modeled.sums[ModeledColumn.summed.firstIndex(of: column)!]?.description)
                case .note: line.field(entry.modeled.note)
                }
            }
            line.endLine()
            lines.append(line.array)
        }
        lines.sort { $0.lexicographicallyPrecedes($1) }
        return CSVLine.header(CampaignDailyRows.allColumns) + lines.flatMap { $0 }
    }
}
