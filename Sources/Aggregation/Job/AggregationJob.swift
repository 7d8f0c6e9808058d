import AggregateSchema
package import Basics
import Foundation
package import Parquet
import PostbackCrypto
import PostbackStore
package import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// The files a table is published as: `part-00000.csv`, `part-00000.parquet`, or both.
package enum AggregateFormat: String, Sendable, CaseIterable {
    case csv, parquet, both

    package var writesCSV: Bool { self != .parquet }
    package var writesParquet: Bool { self != .csv }
}

/// What to aggregate and how.
package struct AggregationRequest: Sendable {
    /// The store: spool read from `DATA/raw/…`, aggregates written to `DATA/agg/…`.
    package var dataDirectory: String
    package var from: UTCDay
    package var to: UTCDay
    /// How many earlier days' keys a day's postbacks are deduplicated against (a copy whose key was
    /// already received in that window is not counted again). Apple retries for up to 9 days.
    package var lookbackDays: Int
    package var workers: Int
    /// Written into manifests, e.g. `postback 0.1.0`.
    package var toolVersion: String

    /// Publish even when a day would replace a published one built from more input or with more
    /// decoded postbacks (`--force`).
    package var force = false
    /// Publish a UTC day that is not over yet, marked `partial` in its manifest (`--allow-open-day`).
    package var allowOpenDay = false
    /// Fit the null-value model for `campaign_daily`'s modeled columns (docs/modeling.md); false writes
    /// them empty (only bench/model-cost does, through `POSTBACK_MODEL=off`, to measure the model's cost).
    package var model = true
    /// Which files each table is published as (`--format`).
    package var format = AggregateFormat.csv
    /// Rows per Parquet row group (settable for tests: a table larger than one row group).
    package var parquetRowGroupRows = ParquetWriter.defaultRowGroupRows
    /// The current UTC day; days from it on are open. Settable for tests.
    package var today = UTCDay(daysSinceEpoch: Int(time(nil) / 86_400))
    /// Where the spool segments are read from when not from `DATA/raw/…` (an object store); the
    /// aggregates are still written under `DATA/agg/…`.
    package var segmentSource: (any SegmentSource)? = nil

    package static let defaultLookbackDays = 10

    package init(
        dataDirectory: String, from: UTCDay, to: UTCDay, lookbackDays: Int = defaultLookbackDays, workers: Int,
        toolVersion: String
    ) {
        self.dataDirectory = dataDirectory
        self.from = from
        self.to = to
        self.lookbackDays = lookbackDays
        self.workers = workers
        self.toolVersion = toolVersion
    }
}

/// What one day's run produced.
package struct DaySummary: Sendable {
    package var day: UTCDay
    package var totals: DayTotals
    /// Rows of `postback_detail_daily` (the table that was `campaign_daily` before rollups; the CLI's
    /// summary keeps its `campaign_daily_rows` name for the scripts that read it).
    package var campaignDailyRows: Int
    package var campaignEventsDailyRows: Int
    package var inputSegments: Int
    package var inputBytes: Int
    package var corruptLines: Int
    package var tornTails: Int
    package var sameDayDuplicates: Int
    package var earlierDayDuplicates: Int
    /// `path:line: reason` for the first corrupt lines.
    package var problems: [String]
    package var manifestPath: String
    /// Lines read by the fast path and by the full record parser (for profiling).
    package var fastPathLines: Int
    package var slowPathLines: Int
    package var bucketCount: Int
    package var largestBucket: Int
    /// Segments of the postbacks spool the day was built from: 0 is a day with no spool at all,
    /// published as explicitly empty (a gap in reports, not zeros).
    package var spoolSegments: Int
    /// The day was not over when it was read (`--allow-open-day`).
    package var partial: Bool
    /// Postbacks in the day's quarantine (`raw/unverifiable/`): not counted; the manifest lists them.
    package var quarantinedPostbacks: Int
    /// Rejected records by verdict, and the most frequent reason: what the summary of a day whose
    /// every record was refused names as the likely cause.
    package var rejectedByStatus: [VerificationStatus: Int] = [:]
    package var mostFrequentRejection: String?
}

/// The nightly job: for each day of the request, dedups the day's spool (across every writer's
/// segments and against the lookback days), decodes with the schemas, and publishes
/// `agg/TABLE/dt=D/part-00000.csv` for every table of `AggregateTables.all` (the detail table, its
/// rollups, the events table, the development rollup) and, last, `agg/_manifests/dt=D.json`, each written to a temporary file, fsynced, renamed and its
/// directory fsynced. A crash leaves each file either old or new; the manifest (which lists the
/// outputs' checksums) says which run a partition is from.
///
/// Days are processed in order, at most two at a time (one being read while the one before it is
/// rendered and written), so memory holds two days' rows at most; the lookback reads
/// the key files of the previous days, built as each day is processed (days before the range are
/// read for their keys only).
package final class AggregationJob: Sendable {
    package let request: AggregationRequest
    package let catalog: SchemaCatalog
    private let layout: StoreLayout
    /// The null-value model's sums of the days this run has read (each published day read once).
    private let modelWindow = ModelWindow()

    package init(request: AggregationRequest, catalog: SchemaCatalog) {
        self.request = request
        self.catalog = catalog
        self.layout = StoreLayout(root: request.dataDirectory)
    }

    /// Runs every day; `onDay` is called as each day is published.
    @discardableResult
    package func run(onDay: (DaySummary) -> Void = { _ in }) throws -> [DaySummary] {
        guard request.from <= request.to else {
            throw AggregationError.usage("--from \(request.from) is after --to \(request.to)")
        }
        guard (0...400).contains(request.lookbackDays) else { throw AggregationError.usage("lookback must be 0 to 400 days") }
        // Checked before anything is read: a day still being written would be published with only
        // part of its postbacks, and tomorrow's run would then look like a loss.
        if request.to > request.today { throw AggregationError.futureDay(request.to, today: request.today) }
        if request.to >= request.today, !request.allowOpenDay { throw AggregationError.openDay(max(request.from, request.today)) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: request.dataDirectory, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw AggregationError.usage("--data \(request.dataDirectory) is not a directory")
        }
        // A mistyped --data must not publish empty days over good ones: the receiver creates the
        // spool directory when it first starts, so a store without one is not a store.
        let spool = layout.spoolDirectory(.postbacks)
        guard FileManager.default.fileExists(atPath: spool, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw AggregationError.usage(
                "--data \(request.dataDirectory) holds no spool (\(spool) is missing): is it the receiver's data directory? (--input aggregates a file of postbacks)"
            )
        }
        return try withWorkDirectory { (work) in try runDays(work: work, onDay: onDay) }
    }

    /// Takes the store's lock and a fresh work directory (anything left there is from a crashed run)
    /// for the length of `body`.
    func withWorkDirectory<R>(_ body: (String) throws -> R) throws -> R {
        let aggregateRoot = layout.root + "/agg"
        try makeDirectories(aggregateRoot)
        let lock = try Self.lockStore(path: aggregateRoot + "/.lock")
        defer { withExtendedLifetime(lock) {} }
        let work = aggregateRoot + "/_work"
        try? FileManager.default.removeItem(atPath: work)
        try DayAggregator.makeDirectory(work)
        defer { try? FileManager.default.removeItem(atPath: work) }
        return try body(work)
    }

    /// An exclusive `flock` on `DATA/agg/.lock`, so two aggregation runs never write the same
    /// partitions or clear each other's work directory. Released when the lock goes away (or the
    /// process dies: the kernel drops flocks with the descriptor).
    private static func lockStore(path: String) throws -> FileLock {
        guard let lock = try AggregationError.onFailure({ () throws(SystemCallError) in try FileLock(path: path) }) else {
            throw AggregationError.locked(path: path)
        }
        return lock
    }

    private func runDays(work: String, onDay: (DaySummary) -> Void) throws -> [DaySummary] {
        var keyFiles: [UTCDay: String] = [:]
        var lookbackReports: [UTCDay: [SegmentReport]] = [:]
        var summaries: [DaySummary] = []
        let writer = BackgroundDayWriter()
        defer { _ = try? writer.finish() }
        var day = request.from.adding(days: -request.lookbackDays)
        while day <= request.to {
            let keysOnly = day < request.from
            let tasks = try segmentTasks(day: day, includeRejected: !keysOnly)
            let earlier = (1...max(1, request.lookbackDays)).compactMap {
                request.lookbackDays == 0 ? nil : keyFiles[day.adding(days: -$0)]
            }
            if !(keysOnly && tasks.isEmpty) {
                let keyFile = "\(work)/keys-\(day).bin"
                let conflicts = keysOnly ? nil : try ConflictSummary.read(layout: layout, day: day)
                let table = try DayAggregator.run(
                    day: day, tasks: tasks, keysOnly: keysOnly, earlierKeyFiles: earlier, keyFile: keyFile,
                    workDirectory: work, workers: request.workers, source: request.segmentSource,
                    conflictsByKey: conflicts?.keyHashes ?? [:])
                keyFiles[day] = keyFile
                lookbackReports[day] = table.segments.filter { $0.spool == .postbacks }
                if !keysOnly {
                    let lookback = (1...max(1, request.lookbackDays)).reversed().flatMap { offset -> [SegmentReport] in
                        request.lookbackDays == 0 ? [] : lookbackReports[day.adding(days: -offset)] ?? []
                    }
                    // Rendering and writing (and fsyncing) a day overlaps with reading the next one, which fills
                    // the gaps where one core would wait; at most one day is in flight.
                    if let summary = try writer.finish() {
                        summaries.append(summary)
                        onDay(summary)
                    }
                    let handOver = UncheckedBox(table)  // the writer owns the table from here on
                    writer.start { () throws -> DaySummary in
                        try self.render(
                            handOver.value, lookback: lookback,
                            quarantine: QuarantineSummary.read(layout: self.layout, day: handOver.value.day),
                            conflicts: conflicts
                        ).write()
                    }
                }
            }
            // Keys older than the next day's window are no longer needed.
            let expired = day.adding(days: 1 - request.lookbackDays)
            for (old, path) in keyFiles where old < expired {
                unlink(path)
                keyFiles[old] = nil
                lookbackReports[old] = nil
            }
            day = day.adding(days: 1)
        }
        if let summary = try writer.finish() {
            summaries.append(summary)
            onDay(summary)
        }
        return summaries
    }

    private func segmentTasks(day: UTCDay, includeRejected: Bool) throws -> [SegmentTask] {
        var tasks: [SegmentTask] = []
        let spools: [StoreLayout.Spool] = includeRejected ? [.postbacks, .rejected] : [.postbacks]
        // Local segments are checked against the seals their writers recorded (a bucket's were
        // checked by the store against the SHA-256 each upload carried).
        let seals = request.segmentSource == nil ? SegmentSeals.load(root: layout.root, day: day) : [:]
        for spool in spools {
            if let source = request.segmentSource {
                // Sorted the way the local listing sorts (writer, then sequence): the order is the tie-breaker.
                let listed = try source.segments(spool, day: day).compactMap { listed in
                    StoreLayout.parseSegmentName(listed.fileName).map { (writer: $0.writer, sequence: $0.sequence, listed) }
                }
                for segment in listed.sorted(by: { ($0.writer, $0.sequence) < ($1.writer, $1.sequence) }) {
                    let name = "raw/\(spool.rawValue)/dt=\(day)/\(segment.2.fileName)"
                    tasks.append(SegmentTask(path: name, name: name, spool: spool, ordinal: tasks.count, size: segment.2.size))
                }
                continue
            }
            let segments: [StoreLayout.Segment]
            do {
                segments = try layout.segments(spool, day: day)
            } catch {
                throw AggregationError.system(
                    SystemCallError(operation: "listing the spool partition", path: error.path, errorNumber: error.errorNumber))
            }
            for segment in segments {
                var status = stat()
                let size = stat(segment.path, &status) == 0 ? Int(status.st_size) : 0
                let name =
                    "raw/\(spool.rawValue)/dt=\(day)/"
                    + (segment.path.split(separator: "/").last.map(String.init) ?? segment.path)
                tasks.append(
                    SegmentTask(
                        path: segment.path, name: name, spool: spool, ordinal: tasks.count, size: size, seals: seals[name] ?? []))
            }
        }
        return tasks
    }

    /// Renders a day (on all workers) into a `PendingDay` that can be written on another thread.
    /// - Parameter quarantine: what the day's quarantine holds (nil with `--input`, which has none).
    /// - Parameter conflicts: the day's conflict evidence (nil with `--input`, which has none).
    func render(
        _ table: DayTable, lookback: [SegmentReport], quarantine: QuarantineSummary? = nil, conflicts: ConflictSummary? = nil
    ) throws
        -> PendingDay
    {
        var trace = PhaseTrace("\(table.day)")
        var rendered = try DayRenderer.render(table, catalog: catalog, workers: request.workers)
        trace.mark("render")
        // The null-value model's columns, after the measured ones (docs/modeling.md).
        let campaignDaily = AggregateTables.rollups.firstIndex { $0.table == AggregateTables.campaignDaily }!
        let measured = rendered.rollups[campaignDaily].bytes
        rendered.rollups[campaignDaily].bytes =
            request.model
            ? try ModelPass.append(campaignDaily: measured, day: table.day, root: layout.root, window: modelWindow)
            : ModelPass.appendEmpty(measured)
        rendered.campaignDailyDevelopment = ModelPass.appendEmpty(rendered.campaignDailyDevelopment)
        trace.mark("model")
        return PendingDay(
            day: table.day, rendered: rendered, facts: DayFacts(table), lookback: lookback,
            schemas: catalog.schemas.filter { rendered.schemaIDs.contains($0.schemaID) }, layout: layout,
            toolVersion: request.toolVersion, lookbackDays: request.lookbackDays,
            partial: table.day >= request.today, force: request.force, format: request.format,
            parquetRowGroupRows: request.parquetRowGroupRows, workers: request.workers, quarantine: quarantine,
            conflicts: conflicts)
    }

    /// Temp file, fsync, rename, fsync directory (DurableFile), after clearing temp files a crashed
    /// run may have left next to the target.
    static func publish(_ bytes: [UInt8], to path: String) throws {
        let directory = String(path[..<path.lastIndex(of: "/")!])
        try makeDirectories(directory)
        DurableFile.removeStaleTemporaries(for: path)
        try AggregationError.onFailure { () throws(SystemCallError) in try DurableFile.write(bytes, to: path) }
    }
}

extension AggregationJob {
    /// Removes a published file this run no longer writes (no error when there is none), then syncs
    /// its directory.
    static func remove(_ path: String) throws {
        guard unlink(path) == 0 else {
            guard errno == ENOENT else {
                throw AggregationError.system(SystemCallError(operation: "unlink", path: path, errorNumber: errno))
            }
            return
        }
        try AggregationError.onFailure { () throws(SystemCallError) in try DurableFile.syncDirectory(containing: path) }
    }
}

func makeDirectories(_ path: String) throws {
    try AggregationError.onFailure { () throws(SystemCallError) in try DurableFile.makeDirectories(path) }
}
