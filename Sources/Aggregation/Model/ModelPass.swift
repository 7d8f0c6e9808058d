package import Basics

/// Appends the modeled columns to a day's rendered `campaign_daily` (docs/modeling.md): the model is
/// fitted per stratum on the measured postbacks of the pooling window (the day's own rows and the
/// published `campaign_daily` files of the 27 days before it, read through `CohortCache`), then every
/// row gets its modeled values. `campaign_daily_development` gets the columns empty.
package enum ModelPass {
    /// The day's rendered `campaign_daily` with the modeled columns appended.
    static func append(campaignDaily csv: [UInt8], day: UTCDay, root: String) throws(AggregationError) -> [UInt8] {
        var pooled = try earlierDays(before: day, root: root)
        pooled.add(try ModelSums.of(csv, path: "campaign_daily of \(day)", parquet: false))
        return try append(campaignDaily: csv, pooled: pooled)
    }

    /// The sums of the published `campaign_daily` files of the pooling window's days before `day`, in
    /// date order (a day not published is simply absent).
    package static func earlierDays(before day: UTCDay, root: String, days: Int = NullValueModel.poolingDays)
        throws(AggregationError) -> ModelSums
    {
        let published = PublishedDays(root: root)
        var pooled = ModelSums()
        for offset in stride(from: days - 1, through: 1, by: -1) {
            let earlier = day.adding(days: -offset)
            guard let file = published.manifest(earlier)?.outputs[AggregateTables.campaignDaily] else { continue }
            let (bytes, path) = try CohortCache.cached(
                kind: "model", root: root, table: AggregateTables.campaignDaily, day: earlier, file: file
            ) { (bytes, path) throws(AggregationError) in
                try ModelSums.of(bytes, path: path, parquet: path.hasSuffix(".parquet")).cacheCSV
            }
            pooled.add(try ModelSums(cacheCSV: bytes, path: path))
        }
        return pooled
    }

    /// `csv` (a rendered `campaign_daily`, measured columns only) with the modeled columns appended,
    /// fitted on `pooled`.
    package static func append(campaignDaily csv: [UInt8], pooled: ModelSums) throws(AggregationError) -> [UInt8] {
        var fits: [ModelStratum: NullValueModel.StratumFit?] = [:]
        var out: [UInt8] = []
        out.reserveCapacity(csv.count + csv.count / 3)
        let headerEnd = (csv.firstIndex(of: 0x0A) ?? csv.count)
        out += csv[..<headerEnd]
        out += Array(("," + AggregateTables.modeledColumns.map(\.name).joined(separator: ",") + "\n").utf8)
        var line = CSVLine()
        try ModelInput.forEachRow(csv, path: "campaign_daily", parquet: false) { row, range throws(AggregationError) in
            line.reset()
            line.field(nil as String?)  // the separator after the measured columns
            fields(of: row, fits: &fits, pooled: pooled, into: &line)
            line.endLine()
            out += csv[range]
            out += line.array
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
