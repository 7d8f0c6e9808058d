/// Phase two of a day, for one bucket: brings together every copy of every key in the bucket
/// (from all workers' files), keeps the first received copy of each key, drops keys already seen on
/// an earlier day of the lookback window, and counts the survivors into their rows.
///
/// One resolver per worker thread; its counters are merged when all buckets are done.
final class BucketResolver {
    private(set) var postbacks: [UInt32]
    private(set) var development: [UInt32]
    private(set) var duplicates: [UInt32]
    /// Counted production postbacks whose first copy was stored with flags.
    private(set) var flagged: [UInt32]
    /// Conflict records counted in the row of their key's first copy (issue 24).
    private(set) var conflicting: [UInt32]
    /// The day's conflict records by dedup-key hash (`ConflictSummary.keyHashes`).
    private let conflictsByKey: [Hash128: UInt32]
    private(set) var sameDayDuplicates = 0
    private(set) var earlierDayDuplicates = 0
    private(set) var counted = 0
    private(set) var largestBucket = 0

    init(rowCount: Int, conflictsByKey: [Hash128: UInt32] = [:]) {
        self.conflictsByKey = conflictsByKey
        conflicting = [UInt32](repeating: 0, count: rowCount)
        postbacks = [UInt32](repeating: 0, count: rowCount)
        development = [UInt32](repeating: 0, count: rowCount)
        duplicates = [UInt32](repeating: 0, count: rowCount)
        flagged = [UInt32](repeating: 0, count: rowCount)
    }

    /// The range of hash high words that bucket `bucket` of `bucketCount` owns.
    static func highRange(bucket: Int, bucketCount: Int) -> ClosedRange<UInt64> {
        guard bucketCount > 1 else { return 0...UInt64.max }
        let shift = UInt64(64 - bucketCount.trailingZeroBitCount)
        let low = UInt64(bucket) << shift
        return low...(bucket == bucketCount - 1 ? UInt64.max : (UInt64(bucket + 1) << shift) - 1)
    }

    /// - Parameters:
    ///   - files: each worker's bucket file with that worker's local → global row map (nil when the
    ///     day is read for its keys only).
    ///   - earlier: the key files of the lookback days.
    /// - Returns: the bucket's distinct key hashes, sorted, for this day's key file.
    func resolve(bucket: Int, bucketCount: Int, files: [(path: String, rows: [UInt32]?)], earlier: [KeyFile])
        throws(AggregationError) -> [Hash128]
    {
        var entries: [DedupEntry] = []
        for file in files {
            var part = try BucketSpill.read(path: file.path)
            if let rows = file.rows {
                for index in part.indices { part[index].row = rows[Int(part[index].row)] }
            }
            entries.append(contentsOf: part)
        }
        largestBucket = max(largestBucket, entries.count)
        guard !entries.isEmpty else { return [] }
        DedupEntry.sort(&entries)

        // Group boundaries: entries of one key are adjacent, earliest copy first.
        var groupStarts: [Int] = []
        var hashes: [Hash128] = []
        for index in entries.indices
        where index == 0 || entries[index].hashHigh != entries[index - 1].hashHigh
            || entries[index].hashLow != entries[index - 1].hashLow
        {
            groupStarts.append(index)
            hashes.append(Hash128(high: entries[index].hashHigh, low: entries[index].hashLow))
        }
        groupStarts.append(entries.count)

        // Keys already received on a lookback day: merge-walk each earlier day's sorted hashes.
        var seenEarlier = [Bool](repeating: false, count: hashes.count)
        let range = Self.highRange(bucket: bucket, bucketCount: bucketCount)
        for file in earlier {
            let previous = try file.hashes(highIn: range)
            var i = 0
            var j = 0
            while i < hashes.count && j < previous.count {
                if hashes[i] == previous[j] {
                    seenEarlier[i] = true
                    i += 1
                    j += 1
                } else if hashes[i] < previous[j] {
                    i += 1
                } else {
                    j += 1
                }
            }
        }

        // Take the counters out of the object for the loop (unique, so no copy-on-write; no exclusivity checks).
        var postbacks: [UInt32] = []
        var development: [UInt32] = []
        var duplicates: [UInt32] = []
        var flagged: [UInt32] = []
        swap(&postbacks, &self.postbacks)
        swap(&development, &self.development)
        swap(&duplicates, &self.duplicates)
        swap(&flagged, &self.flagged)
        defer {
            swap(&postbacks, &self.postbacks)
            swap(&development, &self.development)
            swap(&duplicates, &self.duplicates)
            swap(&flagged, &self.flagged)
        }
        for group in hashes.indices {
            let first = groupStarts[group]
            let copies = groupStarts[group + 1] - first
            if seenEarlier[group] {
                earlierDayDuplicates += copies
                continue
            }
            sameDayDuplicates += copies - 1
            let winner = entries[first]
            guard winner.row != UInt32.max else { continue }
            let row = Int(winner.row)
            counted += 1
            if winner.isDevelopment {
                development[row] += 1
            } else {
                postbacks[row] += 1
                if winner.isFlagged { flagged[row] += 1 }
            }
            duplicates[row] += UInt32(copies - 1)
            if !conflictsByKey.isEmpty, let conflicts = conflictsByKey[hashes[group]] { conflicting[row] += conflicts }
        }
        return hashes
    }
}
