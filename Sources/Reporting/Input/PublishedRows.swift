import AggregateSchema
package import Basics
import PostbackStore

#if canImport(Glibc)
    import Glibc
#endif

/// The rows of one published day table (or install-date cohort table), read only when the file is the one its manifest lists (as
/// the report reads them: `PublishedFile`), and only those a `DataScope` admits: the scope is applied
/// to each row as it is read, before any filter or count of the caller's.
package struct PublishedRows {
    /// What one day of a table turned out to be.
    package enum DayOutcome: Equatable {
        /// Read: `rows` rows passed the scope and filters (of which the caller was handed those it asked for).
        case read(rows: Int)
        /// No manifest for the day, or its manifest lists no such table.
        case missing
        /// Published but not trustworthy (a rerun in progress, a hand edit); the reason.
        case leftOut(String)
    }

    let layout: StoreLayout
    let table: String
    let scope: DataScope
    /// Column name → the value a row must hold there (a null field never matches).
    let filters: [(column: String, value: String)]
    /// Where the days read are kept (whole and unscoped) and found again; nil: every call reads the file.
    let cache: PublishedDayCache?

    /// - Parameter filters: exact matches a row must also pass (`campaign_id`, `country_code`, …);
    ///   a filter on a column the table does not have admits no row.
    /// - Parameter cache: days already read (`PublishedDayCache`); the scope and filters are applied
    ///   to a cached day's rows exactly as to a file's.
    package init(
        dataDirectory: String, table: String, scope: DataScope, filters: [(column: String, value: String)] = [],
        cache: PublishedDayCache? = nil
    ) {
        layout = StoreLayout(root: dataDirectory)
        self.table = table
        self.scope = scope
        self.filters = filters
        self.cache = cache
    }

    /// Hands `visit` the admitted rows of `day` in file order, with the file's header (column
    /// names); `visit` returns false to stop early (the count returned then counts rows up to there).
    /// - Throws: `ReportError` on a malformed file or an I/O error.
    package func forEachRow(
        day: UTCDay, _ visit: (_ header: [String], _ fields: [String?]) -> Bool
    ) throws(ReportError) -> DayOutcome {
        if let cache { return try forEachCachedRow(day: day, cache: cache, visit) }
        let manifestPath = manifestPath(day: day)
        var status = stat()
        guard stat(manifestPath, &status) == 0 else { return .missing }
        let listed = try listed(day: day, manifestPath: manifestPath)
        if listed.csv == nil, let output = listed.parquet {
            let path = layout.aggregateFile(table: table, day: day, extension: "parquet")
            switch try PublishedFile.parquetRows(at: path, matching: output) {
            case .missing: return .leftOut("the manifest lists \(table), but the file is missing")
            case .mismatch: return .leftOut(AggregateLoader.doesNotMatch(table))
            case .read(let decoded):
                let admits = try admitter(header: decoded.header, path: path)
                var count = 0
                for fields in decoded.rows where admits(fields) {
                    count += 1
                    if !visit(decoded.header, fields) { break }
                }
                return .read(rows: count)
            }
        }
        guard let output = listed.csv else { return .missing }
        let path = layout.aggregateFile(table: table, day: day)
        let outcome = try PublishedFile.withCSV(at: path, matching: output) { reader throws(ReportError) -> Int in
            guard let first = try reader.next() else { throw .malformed(path: path, line: 1, reason: "empty file: no header") }
            let header = first.map { $0 ?? "" }
            let admits = try admitter(header: header, path: path)
            var count = 0
            while let fields = try reader.next() {
                guard fields.count == header.count else {
                    throw .malformed(
                        path: path, line: reader.recordLine, reason: "\(fields.count) fields, the header has \(header.count)")
                }
                guard admits(fields) else { continue }
                count += 1
                if !visit(header, fields) { break }
            }
            return count
        }
        switch outcome {
        case .missing: return .leftOut("the manifest lists \(table), but the file is missing")
        case .mismatch: return .leftOut(AggregateLoader.doesNotMatch(table))
        case .read(let count): return .read(rows: count)
        }
    }

    /// `forEachRow` through `cache`: the day's rows from the cache when its manifest and file are
    /// unchanged, else read whole (checked against the manifest as without a cache) and kept.
    private func forEachCachedRow(
        day: UTCDay, cache: PublishedDayCache, _ visit: (_ header: [String], _ fields: [String?]) -> Bool
    ) throws(ReportError) -> DayOutcome {
        let manifestPath = manifestPath(day: day)
        // The identities are taken before anything is read: a file replaced while it is read is
        // kept under its old identity, so the next lookup reads it again (never the reverse).
        guard let manifestIdentity = FileIdentity(path: manifestPath) else { return .missing }
        let key = PublishedDayCache.Key(root: layout.root, table: table, day: day.daysSinceEpoch)
        let cached: PublishedDayCache.Day
        if let found = cache.day(key, manifest: manifestIdentity) {
            cached = found
        } else {
            let listed = try listed(day: day, manifestPath: manifestPath)
            let parquet = listed.csv == nil ? listed.parquet : nil
            guard let output = parquet ?? listed.csv else { return .missing }
            let path = layout.aggregateFile(table: table, day: day, extension: parquet == nil ? "csv" : "parquet")
            guard let fileIdentity = FileIdentity(path: path) else {
                return .leftOut("the manifest lists \(table), but the file is missing")
            }
            let outcome =
                parquet == nil
                ? try PublishedFile.withCSV(at: path, matching: output) { reader throws(ReportError) in
                    try Self.wholeCSV(reader, path: path)
                } : try PublishedFile.parquetRows(at: path, matching: output)
            switch outcome {
            case .missing: return .leftOut("the manifest lists \(table), but the file is missing")
            case .mismatch: return .leftOut(AggregateLoader.doesNotMatch(table))
            case .read(let decoded):
                cached = .init(
                    manifest: manifestIdentity, filePath: path, file: fileIdentity, header: decoded.header,
                    rows: decoded.rows)
            }
            cache.keep(cached, as: key)
        }
        // The rows of the scope's apps and networks by the day's index, each still tested by the scope
        // and the filters as a file's row is.
        let admits = try admitter(header: cached.header, path: cached.filePath)
        var count = 0
        for place in cached.places(admittedBy: scope) ?? Array(cached.rows.indices) {
            let fields = cached.rows[place]
            guard admits(fields) else { continue }
            count += 1
            if !visit(cached.header, fields) { break }
        }
        return .read(rows: count)
    }

    /// Whether `table` is an install-date cohort table (`campaign_cohort_daily` and its development
    /// twin): its days are install dates, listed by the cohort manifests (`agg/_cohort_manifests`).
    var isCohortTable: Bool { AggregateTables.cohortTables.contains { $0.table == table } }

    /// Where the cohort tables' manifests and files lie (`CohortLoader`'s paths).
    private var cohorts: CohortLoader { CohortLoader(dataDirectory: layout.root, table: table) }

    /// The manifest that lists the table's file of `day`: the day's, or the install date's cohort manifest.
    private func manifestPath(day: UTCDay) -> String {
        isCohortTable ? cohorts.manifestPath(day: day) : layout.manifest(day: day)
    }

    /// What the manifest at `manifestPath` lists of the table's file of `day`, as CSV and as Parquet.
    /// A cohort manifest lists its files by path (read only under the documented one, as the report).
    private func listed(day: UTCDay, manifestPath: String) throws(ReportError) -> (
        csv: PublishedFile.Expected?, parquet: PublishedFile.Expected?
    ) {
        if isCohortTable {
            let manifest = try PublishedFile.manifest(at: manifestPath, limit: 64 << 20, CohortManifest.init(json:path:))
            return (
                manifest.outputs[cohorts.relativePath(day: day, extension: "csv")],
                manifest.outputs[cohorts.relativePath(day: day, extension: "parquet")]
            )
        }
        let manifest = try PublishedFile.manifest(at: manifestPath, limit: 256 << 20, DayManifest.init(json:path:))
        return (manifest.outputs[table], manifest.parquetOutputs[table])
    }

    /// Every record of a CSV table, after its header.
    private static func wholeCSV(_ reader: CSVRecordReader, path: String) throws(ReportError) -> (
        header: [String], rows: [[String?]]
    ) {
        guard let first = try reader.next() else { throw .malformed(path: path, line: 1, reason: "empty file: no header") }
        let header = first.map { $0 ?? "" }
        var rows: [[String?]] = []
        while let fields = try reader.next() {
            guard fields.count == header.count else {
                throw .malformed(
                    path: path, line: reader.recordLine, reason: "\(fields.count) fields, the header has \(header.count)")
            }
            rows.append(fields)
        }
        return (header, rows)
    }

    /// The scope, then the filters, as one test of a row's fields by their place in `header`.
    private func admitter(header: [String], path: String) throws(ReportError) -> ([String?]) -> Bool {
        let app = header.firstIndex(of: AggregateColumn.field(.appID).name)
        let network = header.firstIndex(of: AggregateColumn.field(.adNetworkID).name)
        guard let app, let network else {
            throw .malformed(path: path, line: 1, reason: "no app_id or ad_network_id column: rows cannot be scoped")
        }
        let scope = scope
        let filters = filters.map { (index: header.firstIndex(of: $0.column), value: $0.value) }
        return { fields in
            guard scope.admits(app: fields[app], network: fields[network]) else { return false }
            for filter in filters {
                guard let index = filter.index, fields[index] == filter.value else { return false }
            }
            return true
        }
    }
}
