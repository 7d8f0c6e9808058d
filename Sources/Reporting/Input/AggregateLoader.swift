import AggregateSchema
import Basics
import PostbackCrypto
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// What a day's rows are read into: the report's `ReportModel`, the nightly check's `FlowHistory`.
protocol DayRecordSink {
    mutating func add(_ record: CampaignDailyRecord, day: UTCDay) throws(ReportError)
    /// The day's manifest (read only from the production detail table: its side counts).
    mutating func add(_ manifest: DayManifest)
    /// The day was aggregated before it was over (`--allow-open-day`).
    mutating func markPartial(_ day: UTCDay)
    /// A `campaign_daily` row read for its modeled columns only (docs/modeling.md).
    mutating func addModeled(_ record: CampaignDailyRecord) throws(ReportError)
}

extension DayRecordSink {
    mutating func addModeled(_ record: CampaignDailyRecord) throws(ReportError) {}
}

/// Reads the published aggregates of a range of days into a `ReportModel`.
///
/// A day counts only when it is completely published: `postback aggregate` writes the CSV files
/// first and the manifest last, and the manifest holds the CSV's SHA-256. So a day without a
/// manifest is missing (or was interrupted), and a day whose table file does not match
/// its manifest (a rerun in progress, a crash between the two renames, a hand edit) is left out with
/// the reason, rather than mixing two runs. The file is checksummed and then parsed through the same
/// descriptor, so the rows read are the bytes checked even if a rerun replaces the file meanwhile.
struct AggregateLoader {
    let layout: StoreLayout
    /// Rows of other apps are skipped (`report --app`).
    let appID: String?
    /// `postback_detail_daily` (read as `campaign_daily` in days published before the rollups, when that
    /// was the detail table), or `campaign_daily_development` (`report --include-development`): then
    /// the manifests' side counts are not added again, and a day published before that table existed
    /// is left out with the remedy.
    let table: String
    /// The rows a reader may see (`DataScope`): others are skipped as they are read, and a scope
    /// narrower than `everything` leaves out the manifests' store-wide side counts.
    let scope: DataScope

    init(
        dataDirectory: String, appID: String? = nil, scope: DataScope = .everything,
        table: String = AggregateTables.postbackDetailDaily
    ) {
        layout = StoreLayout(root: dataDirectory)
        self.appID = appID
        self.scope = scope
        self.table = table
    }

    /// Whether a row read is one this loader keeps (`--app`, then the scope).
    private func admits(_ record: CampaignDailyRecord) -> Bool {
        (appID == nil || record.appID == appID) && scope.admits(app: record.appID, network: record.adNetworkID)
    }

    func load(from: UTCDay, to: UTCDay) throws(ReportError) -> ReportModel {
        var model = ReportModel(from: from, to: to)
        for day in model.rangeDays {
            switch try loadDay(day, into: &model) {
            case .included: model.days.append(day)
            case .missing: model.missingDays.append(day)
            case .empty: model.emptyDays.append(day)
            case .leftOut(let reason): model.leftOutDays.append((day, reason))
            }
        }
        // Days published with nothing in them still make a page: one that says so and draws gaps.
        guard !model.days.isEmpty || !model.emptyDays.isEmpty else {
            throw .noAggregates(
                directory: layout.root, from: from.description, to: to.description,
                leftOut: model.leftOutDays.map { "\($0.day): \($0.reason)" })
        }
        return model
    }

    /// What one day of the range turned out to be.
    enum DayOutcome {
        case included
        case missing
        /// Published with nothing in it: nothing was received, or the store was not there.
        case empty
        case leftOut(String)
    }

    /// Reads one day's rows into `model` (the report's `ReportModel`, or the nightly check's
    /// `FlowHistory`), by the rules above.
    func loadDay<Model: DayRecordSink>(_ day: UTCDay, into model: inout Model) throws(ReportError) -> DayOutcome {
        let manifestPath = layout.manifest(day: day)
        let readsDetail = table == AggregateTables.postbackDetailDaily
        guard exists(manifestPath) else {
            // A day from before the rollups has its detail rows in campaign_daily.
            let legacyDetail =
                readsDetail && !exists(layout.aggregateFile(table: table, day: day))
                && exists(layout.aggregateFile(table: AggregateTables.campaignDaily, day: day))
            let table = legacyDetail ? AggregateTables.campaignDaily : table
            return exists(layout.aggregateFile(table: table, day: day))
                ? .leftOut(
                    "\(table) has no manifest: the day was not completely published (run 'postback aggregate' for it again)"
                )
                : .missing
        }
        let manifest = try PublishedFile.manifest(at: manifestPath, limit: 256 << 20, DayManifest.init(json:path:))
        let table = readsDetail ? manifest.detailTable : table
        let csvPath = layout.aggregateFile(table: table, day: day)
        if manifest.partial { model.markPartial(day) }
        if manifest.outputs[table] == nil, let output = manifest.parquetOutputs[table] {
            return try loadParquet(day, table: table, output: output, manifest: manifest, into: &model)
        }
        guard let output = manifest.outputs[table] else {
            return .leftOut("its manifest lists no \(table) (published before it existed): run 'postback aggregate' for it again")
        }

        let outcome = try PublishedFile.withCSV(at: csvPath, matching: output) { reader throws(ReportError) -> Int in
            guard let header = try reader.next() else {
                throw .malformed(path: csvPath, line: 1, reason: "empty file: no header")
            }
            let layout = try CampaignDailyRecord.Layout(header: header, path: csvPath)
            var rows = 0
            while let fields = try reader.next() {
                let record = try layout.record(fields, path: csvPath, line: reader.recordLine)
                rows += 1
                guard admits(record) else { continue }
                try model.add(record, day: day)
            }
            return rows
        }
        let rows: Int
        switch outcome {
        case .missing: return .leftOut("the manifest lists \(table), but the file is missing")
        case .mismatch: return .leftOut(Self.doesNotMatch(table))
        case .read(let count): rows = count
        }
        guard rows == output.rows else {
            throw .malformed(path: csvPath, line: nil, reason: "\(rows) rows, its manifest says \(output.rows)")
        }
        if rows == 0, manifest.isEmptyDay { return .empty }
        if readsDetail {
            if scope.isEverything { model.add(manifest) }
            try loadModeled(day, manifest: manifest, into: &model)
        }
        return .included
    }

    /// The production page's modeled figures: `campaign_daily`'s modeled columns (the detail table the
    /// page reads has none), from the CSV (or, for a day published as Parquet only, the Parquet file)
    /// the manifest lists and only when it matches; a day from before the model adds no modeled figure.
    private func loadModeled<Model: DayRecordSink>(_ day: UTCDay, manifest: DayManifest, into model: inout Model)
        throws(ReportError)
    {
        if manifest.outputs[AggregateTables.campaignDaily] == nil,
            let output = manifest.parquetOutputs[AggregateTables.campaignDaily]
        {
            let path = layout.aggregateFile(table: AggregateTables.campaignDaily, day: day, extension: "parquet")
            guard case .read(let table) = try PublishedFile.parquetRows(at: path, matching: output),
                table.header.contains(ModeledColumn.nullRevenueEst.rawValue)
            else { return }
            let layout = try CampaignDailyRecord.Layout(header: table.header.map { $0 }, path: path)
            for (index, fields) in table.rows.enumerated() {
                let record = try layout.record(fields, path: path, line: index + 1)
                guard admits(record) else { continue }
                try model.addModeled(record)
            }
            return
        }
        guard let output = manifest.outputs[AggregateTables.campaignDaily] else { return }
        let path = layout.aggregateFile(table: AggregateTables.campaignDaily, day: day)
        _ = try PublishedFile.withCSV(at: path, matching: output) { reader throws(ReportError) -> Int in
            guard let header = try reader.next(), header.contains(ModeledColumn.nullRevenueEst.rawValue) else { return 0 }
            let layout = try CampaignDailyRecord.Layout(header: header, path: path)
            while let fields = try reader.next() {
                let record = try layout.record(fields, path: path, line: reader.recordLine)
                guard admits(record) else { continue }
                try model.addModeled(record)
            }
            return 0
        }
    }

    /// A day published as Parquet only (`aggregate --format parquet`): the file is read whole (a
    /// day's table is small), checked against its manifest, and its rows read as the CSV's.
    private func loadParquet<Model: DayRecordSink>(
        _ day: UTCDay, table: String, output: DayManifest.Output, manifest: DayManifest, into model: inout Model
    ) throws(ReportError) -> DayOutcome {
        let path = layout.aggregateFile(table: table, day: day, extension: "parquet")
        let decoded: (header: [String], rows: [[String?]])
        switch try PublishedFile.parquetRows(at: path, matching: output) {
        case .missing: return .leftOut("the manifest lists \(table), but the file is missing")
        case .mismatch: return .leftOut(Self.doesNotMatch(table))
        case .read(let table): decoded = table
        }
        let layout = try CampaignDailyRecord.Layout(header: decoded.header.map { $0 }, path: path)
        for (index, fields) in decoded.rows.enumerated() {
            let record = try layout.record(fields, path: path, line: index + 1)
            guard admits(record) else { continue }
            try model.add(record, day: day)
        }
        guard decoded.rows.count == output.rows else {
            throw .malformed(path: path, line: nil, reason: "\(decoded.rows.count) rows, its manifest says \(output.rows)")
        }
        if decoded.rows.isEmpty, manifest.isEmptyDay { return .empty }
        if readsDetail {
            if scope.isEverything { model.add(manifest) }
            try loadModeled(day, manifest: manifest, into: &model)
        }
        return .included
    }

    /// Why a file that is not the one its manifest lists is left out.
    static func doesNotMatch(_ table: String) -> String {
        "\(table) does not match its manifest (a run of 'postback aggregate' may be in progress or was interrupted): "
            + "rerun it for this day"
    }

    private var readsDetail: Bool { table == AggregateTables.postbackDetailDaily }

    private func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }
}
