import Basics
import Foundation
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// What one day's spool adds up to, before schemas and formatting.
final class DayTable {
    let day: UTCDay
    /// Every row key seen (some may end with nothing counted: all their copies were duplicates of
    /// earlier days).
    let rows: RowInterner
    var postbacks: [UInt32]
    var development: [UInt32]
    var duplicates: [UInt32]
    var rejected: [UInt32]
    /// Of `postbacks`, those stored with flags.
    var flagged: [UInt32]
    /// Conflict records of the day (`raw/conflicts/`) whose key's first copy is this row's.
    var conflicting: [UInt32]
    var segments: [SegmentReport] = []
    var sameDayDuplicates = 0
    var earlierDayDuplicates = 0
    var rejectedByStatus: [VerificationStatus: Int] = [:]
    var rejectedReasons: [String: Int] = [:]
    var bucketCount = 1
    var largestBucket = 0
    var fastPathLines = 0
    var slowPathLines = 0

    init(day: UTCDay, rows: RowInterner) {
        self.day = day
        self.rows = rows
        postbacks = Array(repeating: 0, count: rows.count)
        development = postbacks
        duplicates = postbacks
        rejected = postbacks
        flagged = postbacks
        conflicting = postbacks
    }
}

/// Runs both phases of one day: scan segments into rows and bucket files (phase one), then resolve
/// duplicates bucket by bucket (phase two), writing the day's key file for later days' lookback.
///
/// Memory is the row table plus, per worker, one bucket's entries and the bucket buffers; the
/// number of buckets grows with the day's input so that a bucket stays around 64 k entries.
enum DayAggregator {
    static let targetEntriesPerBucket = 65_536
    /// Spool lines are rarely shorter than this; a low guess only means more, smaller buckets.
    static let bytesPerRecordGuess = 256

    static func bucketCount(inputBytes: Int) -> Int {
        let estimate = inputBytes / bytesPerRecordGuess
        var count = 1
        while count < 256 && count * targetEntriesPerBucket < estimate { count <<= 1 }
        return count
    }

    /// - Parameters:
    ///   - keysOnly: a lookback day before the requested range: only its keys are needed.
    ///   - earlierKeyFiles: key files of the days in this day's lookback window.
    ///   - keyFile: where to write this day's key file.
    static func run(
        day: UTCDay, tasks: [SegmentTask], keysOnly: Bool, earlierKeyFiles: [String], keyFile: String,
        workDirectory: String, workers: Int, source: (any SegmentSource)? = nil,
        conflictsByKey: [Hash128: UInt32] = [:]
    ) throws -> DayTable {
        let directory = "\(workDirectory)/day-\(day)"
        try makeDirectory(directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        var trace = PhaseTrace("\(day)")
        let buckets = bucketCount(inputBytes: tasks.reduce(0) { $0 + $1.size })
        let workerCount = max(1, min(workers, tasks.count))
        let scanners = (0..<workerCount).map {
            SegmentScanner(spill: BucketSpill(directory: directory, worker: $0, bucketCount: buckets), keysOnly: keysOnly)
        }
        // Largest first, so one big segment does not start last and run alone.
        let ordered = tasks.sorted { ($0.size, $1.ordinal) > ($1.size, $0.ordinal) }
        // From an object store: downloads run ahead of the scanners, a bounded number of segments in memory.
        let prefetch = source.map { SegmentPrefetch(source: $0, tasks: ordered, window: workerCount + $0.connections) }
        defer { prefetch?.stop() }
        try Parallel.run(workers: workerCount, tasks: ordered.count) { (worker, task) throws(AggregationError) in
            if let prefetch {
                let stream = try prefetch.take(task)
                defer { prefetch.release() }
                try scanners[worker].scan(ordered[task], stream: stream)
            } else {
                try scanners[worker].scan(ordered[task])
            }
        }
        for scanner in scanners { try scanner.spill.finish() }
        trace.mark(keysOnly ? "scan (keys only)" : "scan")

        // One row table for the day; each worker's local ids map into it.
        let rows = RowInterner(capacity: scanners.reduce(0) { $0 + $1.interner.count })
        var maps: [[UInt32]] = []
        for scanner in scanners {
            var map = [UInt32](repeating: 0, count: scanner.interner.count)
            for local in 0..<scanner.interner.count { map[local] = rows.intern(scanner.interner.key(local)) }
            maps.append(map)
        }
        let table = DayTable(day: day, rows: rows)
        table.bucketCount = buckets
        var rejected = [UInt32](repeating: 0, count: rows.count)
        for (worker, scanner) in scanners.enumerated() {
            for (local, count) in scanner.rejectedCounts.enumerated() where count > 0 {
                rejected[Int(maps[worker][local])] += count
            }
            table.segments.append(contentsOf: scanner.reports)
            for (status, count) in scanner.rejectedByStatus { table.rejectedByStatus[status, default: 0] += count }
            for (reason, count) in scanner.rejectedReasons { table.rejectedReasons[reason, default: 0] += count }
            table.fastPathLines += scanner.fastPathLines
            table.slowPathLines += scanner.slowPathLines
        }
        table.segments.sort { $0.name < $1.name }
        trace.mark("merge rows")

        let earlier = try earlierKeyFiles.map { try KeyFile(path: $0) }
        let resolvers = (0..<min(workers, buckets)).map { _ in
            BucketResolver(rowCount: rows.count, conflictsByKey: conflictsByKey)
        }
        try Parallel.run(workers: resolvers.count, tasks: buckets) { (worker, bucket) throws(AggregationError) in
            let files = scanners.indices.map { (path: scanners[$0].spill.path(bucket: bucket), rows: keysOnly ? nil : maps[$0]) }
            let hashes = try resolvers[worker].resolve(bucket: bucket, bucketCount: buckets, files: files, earlier: earlier)
            try writeKeys(hashes, to: "\(directory)/keys-\(bucket).bin")
            for file in files { unlink(file.path) }
        }
        table.rejected = rejected
        // Summed in locals: each access to the table's array properties would be checked for exclusivity.
        var postbacks = [UInt32](repeating: 0, count: rows.count)
        var development = postbacks
        var duplicates = postbacks
        var flagged = postbacks
        var conflicting = postbacks
        for resolver in resolvers {
            let (p, d, u, f) = (resolver.postbacks, resolver.development, resolver.duplicates, resolver.flagged)
            let c = resolver.conflicting
            for row in 0..<rows.count {
                postbacks[row] += p[row]
                development[row] += d[row]
                duplicates[row] += u[row]
                flagged[row] += f[row]
                conflicting[row] += c[row]
            }
            table.sameDayDuplicates += resolver.sameDayDuplicates
            table.earlierDayDuplicates += resolver.earlierDayDuplicates
            table.largestBucket = max(table.largestBucket, resolver.largestBucket)
        }
        table.postbacks = postbacks
        table.development = development
        table.duplicates = duplicates
        table.flagged = flagged
        table.conflicting = conflicting
        try concatenate((0..<buckets).map { "\(directory)/keys-\($0).bin" }, into: keyFile)
        trace.mark("resolve")
        return table
    }

    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw AggregationError.system(SystemCallError(operation: "mkdir", path: path, errorNumber: errno == 0 ? EIO : errno))
        }
    }

    private static func writeKeys(_ hashes: [Hash128], to path: String) throws(AggregationError) {
        let fd = try AggregationError.onFailure { () throws(SystemCallError) in try FileDescriptorIO.create(path) }
        defer { close(fd) }
        try KeyFile.write(hashes, to: fd, path: path)
    }

    private static func concatenate(_ parts: [String], into path: String) throws {
        try AggregationError.onFailure { () throws(SystemCallError) in
            let out = try FileDescriptorIO.create(path)
            defer { close(out) }
            for part in parts {
                defer { unlink(part) }
                try FileDescriptorIO.forEachChunk(ofFile: part) { (chunk) throws(SystemCallError) in
                    try FileDescriptorIO.writeAll(chunk, to: out, path: path)
                }
            }
        }
    }
}
