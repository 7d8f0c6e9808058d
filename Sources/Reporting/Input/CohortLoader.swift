import AggregateSchema
import Basics
import Foundation
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Reads the install cohorts of a range (`campaign_cohort_daily` or `campaign_cohort_daily_development`,
/// partitioned by estimated install date) into a `CohortModel`, by the rules the day tables follow:
/// an install date counts only when its cohort manifest (`agg/_cohort_manifests/dt=D.json`, written
/// last) lists the file with the size and SHA-256 it has; the CSV file is read, or the Parquet file
/// when the cohort was published as Parquet only. A store from before the cohort tables has none of
/// them: the model is empty and the page shows no spend, without an error.
struct CohortLoader {
    static let production = AggregateTables.campaignCohortDaily
    static let development = AggregateTables.campaignCohortDailyDevelopment

    let layout: StoreLayout
    let appID: String?
    let table: String
    /// The rows a reader may see (`DataScope`); a narrower scope than `everything` also leaves out
    /// where the store's spend lies outside the range (a store-wide fact).
    let scope: DataScope

    init(dataDirectory: String, appID: String? = nil, scope: DataScope = .everything, table: String = production) {
        layout = StoreLayout(root: dataDirectory)
        self.appID = appID
        self.scope = scope
        self.table = table
    }

    /// The cohort manifest of install date `day`.
    func manifestPath(day: UTCDay) -> String { "\(layout.root)/" + PublishedLayout.cohortManifest(day) }

    /// The table's file of `day`, as the manifest names it (relative to the store).
    func relativePath(day: UTCDay, extension: String) -> String { "agg/\(table)/dt=\(day)/part-00000.\(`extension`)" }

    func load(from: UTCDay, to: UTCDay) throws(ReportError) -> CohortModel {
        var model = CohortModel()
        for offset in 0...(to.daysSinceEpoch - from.daysSinceEpoch) {
            let day = from.adding(days: offset)
            if let reason = try loadDay(day, week: offset / 7, into: &model) {
                model.leftOutDays.append((day, reason))
            }
        }
        if !model.hasSpend, scope.isEverything { model.spendOutsideRange = spendOutside(from: from, to: to) }
        return model
    }

    /// The first and last install dates outside the range whose cohort manifest counts spend.
    private func spendOutside(from: UTCDay, to: UTCDay) -> (first: UTCDay, last: UTCDay)? {
        let directory = layout.root + "/" + PublishedLayout.cohortManifests
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let days = names.compactMap { name -> UTCDay? in
            guard name.hasPrefix("dt="), name.hasSuffix(".json"), let day = UTCDay(String(name.dropFirst(3).dropLast(5))),
                day < from || day > to,
                let bytes = try? FileBytes.read(path: "\(directory)/\(name)", limit: 64 << 20),
                let manifest = ManifestObject<CohortManifestKey>(json: bytes),
                case .object(let spend)? = manifest.object(.totals, ManifestTotalsKey.self)?[.spendByCurrency],
                !spend.members.isEmpty
            else { return nil }
            return day
        }.sorted()
        guard let first = days.first, let last = days.last else { return nil }
        return (first, last)
    }

    /// Reads one install date's cohort; returns why it was left out, or nil (read, or not there).
    private func loadDay(_ day: UTCDay, week: Int, into model: inout CohortModel) throws(ReportError) -> String? {
        let manifestPath = manifestPath(day: day)
        let csvPath = layout.root + "/" + relativePath(day: day, extension: "csv")
        let parquetPath = layout.root + "/" + relativePath(day: day, extension: "parquet")
        guard exists(manifestPath) else {
            guard exists(csvPath) || exists(parquetPath) else { return nil }
            return "\(table) has no cohort manifest: the cohort was not completely published (run 'postback aggregate' again)"
        }
        let manifest = try PublishedFile.manifest(at: manifestPath, limit: 64 << 20, CohortManifest.init(json:path:))
        let records: [CohortRecord]
        if let output = manifest.outputs[relativePath(day: day, extension: "csv")] {
            let outcome = try PublishedFile.withCSV(at: csvPath, matching: output) { reader throws(ReportError) in
                guard let header = try reader.next() else {
                    throw .malformed(path: csvPath, line: 1, reason: "empty file: no header")
                }
                let layout = try CohortRecord.Layout(header: header, path: csvPath)
                var records: [CohortRecord] = []
                while let fields = try reader.next() {
                    records.append(try layout.record(fields, installDay: day, path: csvPath, line: reader.recordLine))
                }
                return records
            }
            switch outcome {
            case .missing: return "the cohort manifest lists \(table), but the file is missing"
            case .mismatch: return AggregateLoader.doesNotMatch(table)
            case .read(let read): records = read
            }
            guard records.count == output.rows else {
                throw .malformed(path: csvPath, line: nil, reason: "\(records.count) rows, its manifest says \(output.rows)")
            }
        } else if let output = manifest.outputs[relativePath(day: day, extension: "parquet")] {
            let decoded: (header: [String], rows: [[String?]])
            switch try PublishedFile.parquetRows(at: parquetPath, matching: output) {
            case .missing: return "the cohort manifest lists \(table), but the file is missing"
            case .mismatch: return AggregateLoader.doesNotMatch(table)
            case .read(let table): decoded = table
            }
            let layout = try CohortRecord.Layout(header: decoded.header.map { $0 }, path: parquetPath)
            var read: [CohortRecord] = []
            for (index, fields) in decoded.rows.enumerated() {
                read.append(try layout.record(fields, installDay: day, path: parquetPath, line: index + 1))
            }
            guard read.count == output.rows else {
                throw .malformed(path: parquetPath, line: nil, reason: "\(read.count) rows, its manifest says \(output.rows)")
            }
            records = read
        } else if let listed = manifest.paths[table] {
            // Listed under another name than the documented one: not read, and said so.
            return "the cohort manifest lists \(table) as \(listed), not \(relativePath(day: day, extension: "csv"))"
        } else {
            // A cohort published before this table existed (or without it): nothing to read.
            return nil
        }
        for record in records {
            guard appID == nil || record.appID == appID, scope.admits(app: record.appID, network: record.adNetworkID) else {
                continue
            }
            try model.add(record, week: week)
        }
        model.days.append(day)
        return nil
    }

    private func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }
}

/// What the report reads from a cohort manifest (`agg/_cohort_manifests/dt=INSTALL_DAY.json`,
/// docs/aggregate.md "When cohorts are rebuilt"): the files it published, by their path in the store.
struct CohortManifest {
    static let supportedFormats = 1...1

    /// Every output the manifest lists, by `path` (`agg/<table>/dt=D/part-00000.csv` or `.parquet`).
    var outputs: [String: PublishedFile.Expected] = [:]
    /// The path of each output that names its `table`.
    var paths: [String: String] = [:]

    init(json bytes: [UInt8], path: String) throws(ReportError) {
        do {
            try self.init(ManifestObject.parse(bytes))
        } catch {
            throw .malformed(path: path, line: nil, reason: error.reason)
        }
    }

    private init(_ root: ManifestObject<CohortManifestKey>) throws(ManifestError) {
        let format = try root.count(.format)
        guard Self.supportedFormats.contains(format) else {
            throw ManifestError(
                "cohort manifest format \(format) is not one this postback reads (\(Self.supportedFormats.lowerBound) to "
                    + "\(Self.supportedFormats.upperBound)); use a newer postback")
        }
        for output in try root.requiredObjects(.outputs, ManifestOutputKey.self, place: "outputs[].") {
            let path = try output.requiredString(.path)
            if let table = output.string(.table) { paths[table] = path }
            outputs[path] = PublishedFile.Expected(
                rows: try output.count(.rows), bytes: try output.count(.bytes), sha256: try output.requiredString(.sha256))
        }
    }
}
