import AggregateSchema
package import Basics
import PostbackStore

#if canImport(Glibc)
    import Glibc
#endif

/// The rows of one published day table, read only when the file is the one its manifest lists (as
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

    /// - Parameter filters: exact matches a row must also pass (`campaign_id`, `country_code`, …);
    ///   a filter on a column the table does not have admits no row.
    package init(dataDirectory: String, table: String, scope: DataScope, filters: [(column: String, value: String)] = []) {
        layout = StoreLayout(root: dataDirectory)
        self.table = table
        self.scope = scope
        self.filters = filters
    }

    /// Hands `visit` the admitted rows of `day` in file order, with the file's header (column
    /// names); `visit` returns false to stop early (the count returned then counts rows up to there).
    /// - Throws: `ReportError` on a malformed file or an I/O error.
    package func forEachRow(
        day: UTCDay, _ visit: (_ header: [String], _ fields: [String?]) -> Bool
    ) throws(ReportError) -> DayOutcome {
        let manifestPath = layout.manifest(day: day)
        var status = stat()
        guard stat(manifestPath, &status) == 0 else { return .missing }
        let manifest = try PublishedFile.manifest(at: manifestPath, limit: 256 << 20, DayManifest.init(json:path:))
        if manifest.outputs[table] == nil, let output = manifest.parquetOutputs[table] {
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
        guard let output = manifest.outputs[table] else { return .missing }
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
