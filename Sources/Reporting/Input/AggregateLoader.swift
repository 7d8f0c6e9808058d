import Aggregation
import Basics
import PostbackCrypto
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

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

    init(dataDirectory: String, appID: String? = nil, table: String = AggregateTables.postbackDetailDaily) {
        layout = StoreLayout(root: dataDirectory)
        self.appID = appID
        self.table = table
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

    private enum DayOutcome {
        case included
        case missing
        /// Published with nothing in it: nothing was received, or the store was not there.
        case empty
        case leftOut(String)
    }

    private func loadDay(_ day: UTCDay, into model: inout ReportModel) throws(ReportError) -> DayOutcome {
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
        let manifest: DayManifest
        do {
            manifest = try DayManifest(json: try FileBytes.read(path: manifestPath, limit: 256 << 20), path: manifestPath)
        } catch let error as FileBytes.ReadError {
            throw .io(path: error.path, message: error.message)
        } catch let error as ReportError {
            throw error
        } catch {
            throw .io(path: manifestPath, message: "\(error)")
        }
        let table = readsDetail ? manifest.detailTable : table
        let csvPath = layout.aggregateFile(table: table, day: day)
        if manifest.partial { model.partialDays.append(day) }
        if manifest.outputs[table] == nil, let output = manifest.parquetOutputs[table] {
            return try loadParquet(day, table: table, output: output, manifest: manifest, into: &model)
        }
        guard let output = manifest.outputs[table] else {
            return .leftOut("its manifest lists no \(table) (published before it existed): run 'postback aggregate' for it again")
        }

        let fd = open(csvPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return .leftOut("the manifest lists \(table), but the file is missing") }
            throw .io(path: csvPath, message: SystemCallError(operation: "open", path: csvPath, errorNumber: errno).reason)
        }
        defer { close(fd) }
        let (bytes, digest) = try checksum(fd: fd, path: csvPath)
        guard bytes == output.bytes, digest == output.sha256 else {
            return .leftOut(
                "\(table) does not match its manifest (a run of 'postback aggregate' may be in progress or "
                    + "was interrupted): rerun it for this day")
        }
        guard lseek(fd, 0, SEEK_SET) == 0 else {
            throw .io(path: csvPath, message: SystemCallError(operation: "seek", path: csvPath, errorNumber: errno).reason)
        }

        let reader = CSVRecordReader(fd: fd, path: csvPath)
        guard let header = try reader.next() else { throw .malformed(path: csvPath, line: 1, reason: "empty file: no header") }
        let layout = try CampaignDailyRecord.Layout(header: header, path: csvPath)
        var rows = 0
        while let fields = try reader.next() {
            let record = try layout.record(fields, path: csvPath, line: reader.recordLine)
            rows += 1
            if let appID, record.appID != appID { continue }
            try model.add(record, day: day)
        }
        guard rows == output.rows else {
            throw .malformed(path: csvPath, line: nil, reason: "\(rows) rows, its manifest says \(output.rows)")
        }
        if rows == 0, manifest.isEmptyDay { return .empty }
        if readsDetail { model.add(manifest) }
        return .included
    }

    /// A day published as Parquet only (`aggregate --format parquet`): the file is read whole (a
    /// day's table is small), checked against its manifest, and its rows read as the CSV's.
    private func loadParquet(
        _ day: UTCDay, table: String, output: DayManifest.Output, manifest: DayManifest, into model: inout ReportModel
    ) throws(ReportError) -> DayOutcome {
        let path = layout.aggregateFile(table: table, day: day, extension: "parquet")
        guard exists(path) else { return .leftOut("the manifest lists \(table), but the file is missing") }
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(path: path, limit: 1 << 30)
        } catch {
            throw .io(path: error.path, message: error.message)
        }
        guard bytes.count == output.bytes, SHA256.hash(bytes).description == output.sha256 else {
            return .leftOut(
                "\(table) does not match its manifest (a run of 'postback aggregate' may be in progress or "
                    + "was interrupted): rerun it for this day")
        }
        let decoded: (header: [String], rows: [[String?]])
        do {
            decoded = try ParquetTable.textRows(parquet: bytes)
        } catch {
            throw .malformed(path: path, line: nil, reason: "\(error)")
        }
        let layout = try CampaignDailyRecord.Layout(header: decoded.header.map { $0 }, path: path)
        for (index, fields) in decoded.rows.enumerated() {
            let record = try layout.record(fields, path: path, line: index + 1)
            if let appID, record.appID != appID { continue }
            try model.add(record, day: day)
        }
        guard decoded.rows.count == output.rows else {
            throw .malformed(path: path, line: nil, reason: "\(decoded.rows.count) rows, its manifest says \(output.rows)")
        }
        if decoded.rows.isEmpty, manifest.isEmptyDay { return .empty }
        if readsDetail { model.add(manifest) }
        return .included
    }

    private var readsDetail: Bool { table == AggregateTables.postbackDetailDaily }

    private func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// The file's size and SHA-256 (hex), read through `fd` from its current offset.
    private func checksum(fd: Int32, path: String) throws(ReportError) -> (Int, String) {
        let hasher = SHA256Hasher()
        var total = 0
        do {
            try FileDescriptorIO.forEachChunk(of: fd, path: path) { chunk in
                hasher.update(chunk)
                total += chunk.count
            }
        } catch {
            throw .io(path: path, message: error.reason)
        }
        return (total, hasher.finalize().description)
    }
}
