import Basics
import PostbackCrypto
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// One spool segment to read for a day.
struct SegmentTask: Sendable {
    let path: String
    /// Relative to the store root, as the manifest names it.
    let name: String
    let spool: StoreLayout.Spool
    /// Position in the day's sorted segment list: the tie-breaker for copies received in the same
    /// microsecond.
    let ordinal: Int
    let size: Int
    /// What its writers sealed it as (`SegmentSeals`); empty: not sealed, read unchecked.
    var seals: [SegmentSeals.Seal] = []
}

/// What reading one segment found, for the manifest.
struct SegmentReport: Sendable {
    var name: String
    /// Nil for a file given with `--input` (raw postbacks, not a spool segment).
    var spool: StoreLayout.Spool?
    var bytes = 0
    var sha256 = ""
    var lines = 0
    var postbacks = 0
    var rejected = 0
    var corruptLines = 0
    var tornTail = false
    /// The first few corrupt lines, with reasons.
    var problems: [(line: Int, reason: String)] = []
}

/// Phase one of a day, for one worker thread: reads whole segments (checksumming them on the way),
/// decodes each line, turns each verified postback into a row id and a dedup entry for the bucket
/// files, and counts rejected records by row directly (they are not deduplicated).
///
/// Lines are split by `LineSplitter`, as `SegmentReader` splits them, and the segment rules are
/// `SegmentReader`'s: a last line without a newline is a torn tail, as is a last line that does not
/// parse; a bad (or over-long) line before that is corrupt. Neither is counted.
final class SegmentScanner {
    static let maximumLineBytes = SegmentReader.maximumLineBytes
    static let readChunk = 4 << 20
    static let problemsKept = 20
    static let reasonsKept = 200

    let keysOnly: Bool
    let interner = RowInterner()
    private(set) var rejectedCounts: [UInt32] = []
    let spill: BucketSpill
    private let decoder = SpoolLineDecoder()
    private let encoder = RowKeyEncoder()
    private(set) var reports: [SegmentReport] = []
    private(set) var rejectedByStatus: [VerificationStatus: Int] = [:]
    private(set) var rejectedReasons: [String: Int] = [:]

    init(spill: BucketSpill, keysOnly: Bool) {
        self.spill = spill
        self.keysOnly = keysOnly
    }

    var fastPathLines: Int { decoder.fastPathLines }
    var slowPathLines: Int { decoder.slowPathLines }

    /// - Parameter stream: the segment's bytes as they download from an object store (nil: read the file).
    func scan(_ task: SegmentTask, stream: SegmentStream? = nil) throws(AggregationError) {
        let fd = stream == nil ? open(task.path, O_RDONLY | O_CLOEXEC) : -1
        guard fd >= 0 || stream != nil else {
            throw .system(SystemCallError(operation: "open", path: task.path, errorNumber: errno))
        }
        defer { if fd >= 0 { close(fd) } }
        let hasher = SHA256Hasher()
        var report = SegmentReport(name: task.name, spool: task.spool)
        var lines = LineSplitter(maximumLineBytes: Self.maximumLineBytes, chunkBytes: Self.readChunk)
        var pendingFailure: (line: Int, reason: String)? = nil
        var summary = SpoolLineSummary()

        func settlePending(isLast: Bool) {
            guard let failure = pendingFailure else { return }
            pendingFailure = nil
            if isLast {
                report.tornTail = true
            } else {
                report.corruptLines += 1
                if report.problems.count < Self.problemsKept { report.problems.append(failure) }
            }
        }

        while true {
            let chunk = try lines.fill { (room) throws(AggregationError) -> Int in
                // A stream gives the same chunks a file read does, so the line handling below is shared.
                if let stream { return try stream.read(into: room) }
                do throws(SystemCallError) { return try FileDescriptorIO.read(fd, into: room, path: task.path) } catch {
                    throw .system(error)
                }
            }
            if chunk.isEmpty {
                // End of file: a line left without its newline is a torn write.
                if lines.finish() != nil {
                    settlePending(isLast: false)
                    report.tornTail = true
                } else {
                    settlePending(isLast: true)
                }
                break
            }
            hasher.update(chunk)
            report.bytes += chunk.count
            while let line = lines.next() {
                settlePending(isLast: false)
                guard let bytes = line.bytes else {
                    report.corruptLines += 1
                    if report.problems.count < Self.problemsKept {
                        report.problems.append((line.number, SegmentReader.tooLong(line.length)))
                    }
                    continue
                }
                if let failure = try handle(bytes, task: task, offset: line.offset, report: &report, summary: &summary) {
                    // Zeros a power cut left are torn wherever they are (SegmentReader.isPowerCutDamage).
                    if SegmentReader.isPowerCutDamage(bytes) {
                        report.tornTail = true
                    } else {
                        pendingFailure = (line.number, failure)
                    }
                }
            }
        }
        report.lines = lines.lineCount
        report.sha256 = hasher.finalize().description
        // The hash is taken for the manifest anyway: checking it against the seal costs nothing.
        if !task.seals.isEmpty, !task.seals.contains(SegmentSeals.Seal(size: report.bytes, sha256: report.sha256)) {
            throw .damagedSegment(path: task.path, size: report.bytes, sha256: report.sha256, sealed: task.seals[0])
        }
        reports.append(report)
    }

    /// Processes one complete line; returns a reason when it is not a valid record (whether that is
    /// corruption or a torn tail depends on whether another line follows).
    private func handle(
        _ line: UnsafeRawBufferPointer, task: SegmentTask, offset: Int, report: inout SegmentReport,
        summary: inout SpoolLineSummary
    ) throws(AggregationError) -> String? {
        switch decoder.decode(line, spool: task.spool, into: &summary) {
        case .corrupt(let reason):
            return reason
        case .rejected(let facts):
            report.rejected += 1
            guard !keysOnly else { return nil }
            encoder.encodeRejected(
                appID: facts.appID, postbackProtocol: facts.postbackProtocol, version: facts.version,
                adNetworkID: facts.adNetworkID)
            let row = Int(interner.intern(encoder.bytes))
            if row >= rejectedCounts.count {
                rejectedCounts.append(contentsOf: repeatElement(0, count: row + 1 - rejectedCounts.count))
            }
            rejectedCounts[row] += 1
            rejectedByStatus[facts.status, default: 0] += 1
            let reason = facts.reason ?? "(no reason given)"
            if rejectedReasons[reason] != nil || rejectedReasons.count < Self.reasonsKept {
                rejectedReasons[reason, default: 0] += 1
            } else {
                rejectedReasons["(other reasons)", default: 0] += 1
            }
            return nil
        case .verified(let inScratch):
            report.postbacks += 1
            if inScratch {
                try decoder.scratch.withBytes { (scratch: UnsafeRawBufferPointer) throws(AggregationError) in
                    try emit(summary, base: scratch, task: task, offset: offset)
                }
            } else {
                try emit(summary, base: line, task: task, offset: offset)
            }
            return nil
        }
    }

    @inline(__always)
    private func emit(_ summary: SpoolLineSummary, base: UnsafeRawBufferPointer, task: SegmentTask, offset: Int)
        throws(AggregationError)
    {
        guard let key = summary.dedupKey, summary.hasFields else { return }
        let hash = Hash128.of(UnsafeRawBufferPointer(rebasing: base[key.start..<(key.start + key.count)]))
        var row = UInt32.max
        var stored = summary.fields
        var isFlagged = summary.isFlagged
        // Apple: "Nonwinning postbacks don't contain conversion values". One stored on a non-winning
        // postback (added on the way, kept by a build before the verifier dropped it) is never
        // counted: the postback is, without its value, and flagged (docs/aggregate.md).
        if stored.didWin == false, stored.has(.fineValue) || stored.has(.coarseValue) {
            stored.set(.fineValue, nil as Int64?)
            stored.setChoice(.coarseValue, nil)
            isFlagged = true
        }
        // Development (a development or test key, or SKAdNetwork test mode): Developer Mode's timing.
        let production = summary.isProduction && !stored.isTestMode
        FieldSlots.reading(stored) { fields in
            if !keysOnly {
                let installDay = InstallDateEstimate.day(
                    receivedAtMicros: summary.receivedAtMicros,
                    windows: stored.hasConversionWindows(in: base),
                    sequenceIndex: fields.integer(.sequenceIndex) ?? 0, development: !production)
                encoder.encodePostback(fields, installDay: installDay, base: base)
                row = interner.intern(encoder.bytes)
            }
        }
        try spill.append(
            DedupEntry(
                hashHigh: hash.high, hashLow: hash.low, receivedAt: summary.receivedAtMicros,
                order: DedupEntry.order(segment: task.ordinal, offset: offset), row: row,
                flags: (production ? 0 : DedupEntry.developmentFlag) | (isFlagged ? DedupEntry.flaggedFlag : 0)))
    }
}
