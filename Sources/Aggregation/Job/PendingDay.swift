import AggregateSchema
import Basics
import Dispatch
import PostbackCrypto
import PostbackStore
import Postbacks

/// What a day's manifest and summary need from its `DayTable`, as a value that can cross threads.
struct DayFacts: Sendable {
    var segments: [SegmentReport]
    var sameDayDuplicates: Int
    var earlierDayDuplicates: Int
    var rejectedByStatus: [VerificationStatus: Int]
    var rejectedReasons: [String: Int]
    var fastPathLines: Int
    var slowPathLines: Int
    var bucketCount: Int
    var largestBucket: Int

    init(_ table: DayTable) {
        segments = table.segments
        sameDayDuplicates = table.sameDayDuplicates
        earlierDayDuplicates = table.earlierDayDuplicates
        rejectedByStatus = table.rejectedByStatus
        rejectedReasons = table.rejectedReasons
        fastPathLines = table.fastPathLines
        slowPathLines = table.slowPathLines
        bucketCount = table.bucketCount
        largestBucket = table.largestBucket
    }
}

/// A rendered day, ready to be published: the CSV files, then the manifest, each atomically.
struct PendingDay: Sendable {
    let day: UTCDay
    let rendered: RenderedDay
    let facts: DayFacts
    let lookback: [SegmentReport]
    let schemas: [ConversionSchema]
    let layout: StoreLayout
    let toolVersion: String
    let lookbackDays: Int
    /// The UTC day was not over when it was read (`--allow-open-day`).
    let partial: Bool
    let force: Bool
    let format: AggregateFormat
    let parquetRowGroupRows: Int
    /// Threads for encoding the Parquet files.
    let workers: Int
    let quarantine: QuarantineSummary?
    let conflicts: ConflictSummary?

    func write() throws -> DaySummary {
        var trace = PhaseTrace("\(day)")
        let manifestPath = layout.manifest(day: day)
        let counted = facts.segments.filter { $0.spool != .rejected }
        if !force, let published = PublishedDay(manifestAt: manifestPath),
            let losses = published.regression(
                to: PublishedDay(
                    segments: counted.count, bytes: counted.reduce(0) { $0 + $1.bytes },
                    decodedPostbacks: rendered.totals.decodedPostbacks))
        {
            throw AggregationError.worseThanPublished(day: day, manifest: manifestPath, losses: losses)
        }
        var outputs: [ManifestOutput] = []
        // A file of the format this run does not write is left from an earlier run: removed once the
        // manifest (which no longer lists it) is published.
        var stale: [String] = []
        // The Parquet files, made from the rendered CSV: the tables on the job's workers at once.
        let tables = rendered.tables
        let parquet = tables.map { _ in ResultSlot<[UInt8]>() }
        if format.writesParquet {
            try Parallel.run(workers: workers, tasks: tables.count) { (_, task) in
                let (table, columns) = AggregateTables.columnsByTable[task]
                precondition(tables[task].name == table, "rendered tables in AggregateTables.all's order")
                parquet[task].value = try ParquetTable.encode(
                    csv: tables[task].bytes, table: table, columns: columns, rowGroupRows: parquetRowGroupRows)
            }
        }
        for (index, (name, csv, rows)) in tables.enumerated() {
            for (kind, writes) in [("csv", format.writesCSV), ("parquet", format.writesParquet)] {
                let path = layout.aggregateFile(table: name, day: day, extension: kind)
                guard writes else {
                    stale.append(path)
                    continue
                }
                let bytes = kind == "csv" ? csv : parquet[index].value!
                try AggregationJob.publish(bytes, to: path)
                outputs.append(
                    ManifestOutput(
                        table: name, path: "agg/\(name)/dt=\(day)/part-00000.\(kind)", rows: rows, bytes: bytes.count,
                        sha256: SHA256.hash(bytes).description))
            }
        }
        let manifest = ManifestWriter.manifest(
            day: day, toolVersion: toolVersion, lookbackDays: lookbackDays, facts: facts,
            lookback: lookback, schemas: schemas, outputs: outputs, totals: rendered.totals,
            partial: partial, quarantine: quarantine, conflicts: conflicts)
        try AggregationJob.publish(manifest, to: manifestPath)
        for path in stale { try AggregationJob.remove(path) }
        trace.mark("publish")
        var problems: [String] = []
        for segment in facts.segments {
            for problem in segment.problems { problems.append("\(segment.name):\(problem.line): \(problem.reason)") }
        }
        return DaySummary(
            day: day, totals: rendered.totals, campaignDailyRows: rendered.postbackDetailDailyRows,
            campaignEventsDailyRows: rendered.campaignEventsDailyRows, inputSegments: facts.segments.count,
            inputBytes: facts.segments.reduce(0) { $0 + $1.bytes },
            corruptLines: facts.segments.reduce(0) { $0 + $1.corruptLines },
            tornTails: facts.segments.filter(\.tornTail).count, sameDayDuplicates: facts.sameDayDuplicates,
            earlierDayDuplicates: facts.earlierDayDuplicates, problems: problems, manifestPath: manifestPath,
            fastPathLines: facts.fastPathLines, slowPathLines: facts.slowPathLines, bucketCount: facts.bucketCount,
            largestBucket: facts.largestBucket, spoolSegments: facts.segments.filter { $0.spool == .postbacks }.count,
            partial: partial,
            quarantinedPostbacks: quarantine?.postbacks.values.reduce(0, +) ?? 0, rejectedByStatus: facts.rejectedByStatus,
            mostFrequentRejection: facts.rejectedReasons.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key)
    }
}

/// Renders and writes one day at a time on a background thread, overlapping with reading the next
/// day. `finish()` waits for the day in progress and returns its summary (or rethrows its error);
/// days are therefore published, and reported, in order.
final class BackgroundDayWriter {
    private var inFlight: (group: DispatchGroup, slot: ResultSlot<Result<DaySummary, any Error>>)?

    func start(_ work: @escaping @Sendable () throws -> DaySummary) {
        precondition(inFlight == nil, "finish() the previous day first")
        let group = DispatchGroup()
        let slot = ResultSlot<Result<DaySummary, any Error>>()
        group.enter()
        DispatchQueue.global(qos: .userInitiated).async {
            slot.value = Result { try work() }
            group.leave()
        }
        inFlight = (group, slot)
    }

    func finish() throws -> DaySummary? {
        guard let (group, slot) = inFlight else { return nil }
        inFlight = nil
        group.wait()
        return try slot.value?.get()
    }
}
