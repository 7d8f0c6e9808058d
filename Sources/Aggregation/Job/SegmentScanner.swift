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
/// Line rules are `SegmentReader`'s: a last line without a newline is a torn tail, as is a last line
/// that does not parse; a bad line before that is corrupt. Neither is counted.
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
    private var buffer: [UInt8]

    init(spill: BucketSpill, keysOnly: Bool) {
        self.spill = spill
        self.keysOnly = keysOnly
        buffer = [UInt8](repeating: 0, count: Self.maximumLineBytes + Self.readChunk)
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
        var filled = 0  // bytes in buffer
        var lineStart = 0  // start of the current (incomplete) line in buffer
        var bufferOffset = 0  // file offset of buffer[0]
        var lineNumber = 0
        var skippingLongLine = false
        var longLineLength = 0
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
            let got: Int
            if let stream {
                // The same chunks a file read gives, so the line handling below is shared.
                let room = min(Self.readChunk, buffer.count - filled)
                got = try buffer.withMutableBytes { (target) throws(AggregationError) -> Int in
                    try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: target[filled..<(filled + room)]))
                }
            } else {
                do { got = try FileDescriptorIO.read(fd, into: &buffer, from: filled, path: task.path) } catch {
                    throw .system(error)
                }
            }
            if got == 0 {
                // End of file: what is left has no newline, a torn write.
                if skippingLongLine || filled > lineStart {
                    settlePending(isLast: false)
                    lineNumber += 1
                    report.tornTail = true
                } else {
                    settlePending(isLast: true)
                }
                break
            }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[filled..<(filled + got)])) }
            report.bytes += got
            var scanFrom = filled
            filled += got
            try buffer.withBytes { (bytes: UnsafeRawBufferPointer) throws(AggregationError) in
                let base = bytes.baseAddress!
                while scanFrom < filled {
                    guard let found = memchr(base + scanFrom, 0x0A, filled - scanFrom) else { break }
                    let newline = base.distance(to: UnsafeRawPointer(found))
                    scanFrom = newline + 1
                    lineNumber += 1
                    settlePending(isLast: false)
                    if skippingLongLine {
                        longLineLength += newline - lineStart
                        skippingLongLine = false
                        report.corruptLines += 1
                        if report.problems.count < Self.problemsKept {
                            report.problems.append(
                                (lineNumber, "line of \(longLineLength) bytes exceeds \(Self.maximumLineBytes)"))
                        }
                    } else {
                        var length = newline - lineStart
                        if length > 0, bytes[newline - 1] == 0x0D { length -= 1 }
                        let line = UnsafeRawBufferPointer(start: base + lineStart, count: length)
                        if let failure = try handle(
                            line, task: task, offset: bufferOffset + lineStart, report: &report, summary: &summary)
                        {
                            pendingFailure = (lineNumber, failure)
                        }
                    }
                    lineStart = newline + 1
                }
            }
            // Keep the incomplete line; drop it (counting its length) once it is longer than any record.
            let partial = filled - lineStart
            if skippingLongLine || partial > Self.maximumLineBytes {
                if !skippingLongLine { longLineLength = 0 }
                skippingLongLine = true
                longLineLength += partial
                bufferOffset += filled
                filled = 0
                lineStart = 0
            } else if lineStart > 0 {
                buffer.withUnsafeMutableBytes { bytes in
                    if partial > 0 { memmove(bytes.baseAddress!, bytes.baseAddress! + lineStart, partial) }
                }
                bufferOffset += lineStart
                filled = partial
                lineStart = 0
            }
        }
        report.lines = lineNumber
        report.sha256 = hasher.finalize().description
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
        let isTestMode = FieldSlots.reading(summary.fields) { fields in
            if !keysOnly {
                let installDay = InstallDateEstimate.day(
                    receivedAtMicros: summary.receivedAtMicros,
                    windows: summary.fields.hasConversionWindows(in: base),
                    sequenceIndex: fields.integer(.sequenceIndex) ?? 0)
                encoder.encodePostback(fields, installDay: installDay, base: base)
                row = interner.intern(encoder.bytes)
            }
            return fields.boolean(.testMode) ?? false
        }
        let production = summary.isProduction && !isTestMode
        try spill.append(
            DedupEntry(
                hashHigh: hash.high, hashLow: hash.low, receivedAt: summary.receivedAtMicros,
                order: DedupEntry.order(segment: task.ordinal, offset: offset), row: row,
                flags: (production ? 0 : DedupEntry.developmentFlag) | (summary.isFlagged ? DedupEntry.flaggedFlag : 0)))
    }
}
