import AggregateSchema
package import Basics
import Locking

/// Appends the modeled columns to a day's rendered `campaign_daily` (docs/modeling.md): the model is
/// fitted per stratum on the measured postbacks of the pooling window (the day's own rows and the
/// published `campaign_daily` files of the 27 days before it, read through `CohortCache`), then every
/// row gets its modeled values. `campaign_daily_development` gets the columns empty.
package enum ModelPass {
    /// The day's rendered `campaign_daily` with the modeled columns appended; `window` keeps the sums
    /// of the days already read, so a run over many days reads each published day once.
    static func append(campaignDaily csv: [UInt8], day: UTCDay, root: String, window: ModelWindow) throws
        -> [UInt8]
    {
        var rows: [(row: ModelInputRow, range: Range<Int>)] = []
        var today = ModelSums()
        try ModelInput.forEachRow(csv, path: "campaign_daily of \(day)", parquet: false) { row, range in
            rows.append((row, range))
            if let stratum = row.stratum, let measured = row.measured { today.add(stratum, row.campaign, measured) }
        }
        var pooled = try window.earlierDays(before: day, root: root)
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
        let estimate = k > 0 ? NullValueModel.estimate(nulls: k, model: fit.model(row.campaign)) : .zero
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
        line.field(estimate.logPZero.description)
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

/// The pooling window of the days a run publishes, slid from day to day: the sums of the published
/// days D−27 … D−1 kept as one total, each day added once (read from `DATA/cache/model-2`, or the
/// published file, the first time) and taken away when it leaves the window. The sums are exact, so the
/// total is the same bits however the window got there.
final class ModelWindow: Sendable {
    private struct State {
        var total = ModelSums()
        var included: [UTCDay: ModelSums] = [:]
        /// Days published by this run, kept until they join the window.
        var kept: [UTCDay: ModelSums] = [:]
    }

    private let state = Locked(State())

    init() {}

    /// A day this run published (its sums, so that the next days need not read it back).
    func keep(_ sums: ModelSums, for day: UTCDay) {
        state.withLock { $0.kept[day] = sums }
    }

    /// The sums of the published days D−27 … D−1.
    func earlierDays(before day: UTCDay, root: String) throws -> ModelSums {
        let first = day.adding(days: 1 - NullValueModel.poolingDays)
        let wanted = (1..<NullValueModel.poolingDays).map { day.adding(days: -$0) }
        var added: [UTCDay: ModelSums] = [:]
        let missing = state.withLock { state in wanted.filter { state.included[$0] == nil && state.kept[$0] == nil } }
        let published = PublishedDays(root: root)
        for earlier in missing {
            guard let file = published.manifest(earlier)?.outputs[AggregateTables.campaignDaily] else { continue }
            let (bytes, path) = try CohortCache.cached(
                kind: "model-2", root: root, table: AggregateTables.campaignDaily, day: earlier, file: file
            ) { (bytes, path) in
                try ModelSums.of(bytes, path: path, parquet: path.hasSuffix(".parquet")).cacheCSV
            }
            added[earlier] = try ModelSums(cacheCSV: bytes, path: path)
        }
        return state.withLock { state in
            for (old, sums) in state.included where old < first || old >= day {
                state.total.subtract(sums)
                state.included[old] = nil
            }
            for earlier in wanted where state.included[earlier] == nil {
                guard let sums = state.kept.removeValue(forKey: earlier) ?? added[earlier] else { continue }
                state.total.add(sums)
                state.included[earlier] = sums
            }
            for old in state.kept.keys where old < first { state.kept[old] = nil }
            return state.total
        }
    }
}
