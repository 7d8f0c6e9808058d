package import Basics
import Locking

/// Appends the modeled columns to a day's rendered `campaign_daily` (docs/modeling.md): the model is
/// fitted per stratum on the measured postbacks of the pooling window (the day's own rows and the
/// published `campaign_daily` files of the 27 days before it, read through `CohortCache`), then every
/// row gets its modeled values. `campaign_daily_development` gets the columns empty.
package enum ModelPass {
    /// The day's rendered `campaign_daily` with the modeled columns appended; `window` keeps the sums
    /// of the days already read, so a run over many days reads each published day once.
    static func append(campaignDaily csv: [UInt8], day: UTCDay, root: String, window: ModelWindow) throws(AggregationError)
        -> [UInt8]
    {
        var rows: [(row: ModelInputRow, range: Range<Int>)] = []
        var today = ModelSums()
        var wanted = Set<ModelStratum>()
        try ModelInput.forEachRow(csv, path: "campaign_daily of \(day)", parquet: false) { row, range throws(AggregationError) in
            rows.append((row, range))
            guard let stratum = row.stratum else { return }
            wanted.insert(stratum)
            if let measured = row.measured { today.add(stratum, row.campaign, measured) }
        }
        var pooled = try window.earlierDays(before: day, root: root, only: wanted)
        pooled.add(today)
        window.keep(today, for: day)
        return append(campaignDaily: csv, rows: rows, pooled: pooled)
    }

    /// `csv` (a rendered `campaign_daily`, measured columns only; `rows` its rows) with the modeled
    /// columns appended, fitted on `pooled`.
    static func append(campaignDaily csv: [UInt8], rows: [(row: ModelInputRow, range: Range<Int>)], pooled: ModelSums)
        -> [UInt8]
    {
        var fits: [ModelStratum: NullValueModel.StratumFit?] = [:]
        var out: [UInt8] = []
        out.reserveCapacity(csv.count + csv.count / 3)
        let headerEnd = (csv.firstIndex(of: 0x0A) ?? csv.count)
        out += csv[..<headerEnd]
        out += Array(("," + AggregateTables.modeledColumns.map(\.name).joined(separator: ",") + "\n").utf8)
        var line = CSVLine()
        for (row, range) in rows {
            line.reset()
            line.field(nil as String?)  // the separator after the measured columns
            fields(of: row, fits: &fits, pooled: pooled, into: &line)
            line.endLine()
            out += csv[range]
            line.bytes.withUnsafeBytes { out.append(contentsOf: $0) }
        }
        return out
    }

    private static func fields(
        of row: ModelInputRow, fits: inout [ModelStratum: NullValueModel.StratumFit?], pooled: ModelSums,
        into line: inout CSVLine
    ) {
        func empty(_ count: Int) { for _ in 0..<count { line.field(nil as String?) } }
        guard let stratum = row.stratum else { return empty(ModeledColumn.allCases.count) }
        if fits[stratum] == nil { fits[stratum] = NullValueModel.fit(pooled.strata[stratum] ?? [:]) }
        let fit = fits[stratum]!
        let measured = fit?.measured ?? 0
        guard let fit, measured >= NullValueModel.minMeasured else {
            empty(ModeledColumn.allCases.count - 1)
            line.field(
                "too little data: \(measured) measured postback\(measured == 1 ? "" : "s") for this app and window in "
                    + "\(NullValueModel.poolingDays) days (\(NullValueModel.minMeasured) needed)")
            return
        }
        let k = max(0, row.nullValues)
        let estimate =
            k > 0
            ? NullValueModel.estimate(nulls: k, posterior: fit.posterior(row.campaign), sigma2: fit.sigma2)
            : NullValueModel.RowEstimate(estimate: 0, low: 0, high: 0, valuesVariance: 0, meanSD: 0)
        let modeled = money(estimate.estimate)
        line.field(modeled)
        line.field(money(estimate.low))
        line.field(money(estimate.high))
        if let revenue = row.revenue {
            line.field(Money(micros: revenue.micros + modeled.micros))
        } else {
            line.field(k > 0 ? modeled : nil)
        }
        line.field(estimate.valuesVariance.description)
        line.field(estimate.meanSD.description)
        line.field(nil as String?)
    }

    /// An amount rounded to the micro-unit (half away from zero).
    static func money(_ value: Double) -> Money { Money(micros: Int64((value * 1e6).rounded())) }

    /// `csv` with the modeled columns appended empty (the development table; `campaign_daily` with
    /// `AggregationRequest.model` false).
    static func appendEmpty(_ csv: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(csv.count + csv.count / 8)
        let names = Array(("," + AggregateTables.modeledColumns.map(\.name).joined(separator: ",")).utf8)
        let empty = Array(String(repeating: ",", count: ModeledColumn.allCases.count).utf8)
        // Records, not lines: a quoted field may hold a line break.
        var reader = RenderedCSV(csv)
        var fields: [RenderedCSV.Field] = []
        var start = 0
        var first = true
        while reader.nextFields(into: &fields) != nil {
            var end = reader.position
            if end > start, csv[end - 1] == 0x0A { end -= 1 }
            out += csv[start..<end]
            out += first ? names : empty
            out.append(0x0A)
            first = false
            start = reader.position
        }
        return out
    }
}

/// The sums of the published days a run has read, by day: the pooling window of each next day is
/// then read from memory (and from `DATA/cache/model` or the published file only the first time).
final class ModelWindow: Sendable {
    private let days = Locked<[UTCDay: ModelSums]>([:])

    init() {}

    func keep(_ sums: ModelSums, for day: UTCDay) {
        days.withLock { days in
            days[day] = sums
            // Older than any later day's window.
            for old in days.keys where old < day.adding(days: 1 - NullValueModel.poolingDays) { days[old] = nil }
        }
    }

    /// The sums of the days D−27 … D−1 (those published), added in date order; only the strata of
    /// `wanted` (all when nil).
    func earlierDays(before day: UTCDay, root: String, only wanted: Set<ModelStratum>?) throws(AggregationError) -> ModelSums {
        let published = PublishedDays(root: root)
        var pooled = ModelSums()
        for offset in stride(from: NullValueModel.poolingDays - 1, through: 1, by: -1) {
            let earlier = day.adding(days: -offset)
            var sums = days.withLock { $0[earlier] }
            if sums == nil {
                guard let file = published.manifest(earlier)?.outputs[AggregateTables.campaignDaily] else { continue }
                let (bytes, path) = try CohortCache.cached(
                    kind: "model", root: root, table: AggregateTables.campaignDaily, day: earlier, file: file
                ) { (bytes, path) throws(AggregationError) in
                    try ModelSums.of(bytes, path: path, parquet: path.hasSuffix(".parquet")).cacheCSV
                }
                let read = try ModelSums(cacheCSV: bytes, path: path)
                keep(read, for: earlier)
                sums = read
            }
            pooled.add(sums!, only: wanted)
        }
        return pooled
    }
}
