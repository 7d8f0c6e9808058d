package import Basics
import Foundation
import PostbackCrypto
import PostbackStore
package import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

extension AggregationJob {
    /// The time given to every postback of an `--input` file: noon UTC of the requested day. Raw
    /// postbacks carry no receipt time, so the day is the user's; noon keeps the estimated install
    /// date from depending on an arbitrary hour.
    package static func inputReceivedAt(_ day: UTCDay) -> UTCTimestamp {
        UTCTimestamp(microsecondsSinceEpoch: Int64(day.daysSinceEpoch) * 86_400_000_000 + 12 * 3_600_000_000)
    }

    /// Aggregates raw postbacks (one JSON postback per line, or single-postback files) as if they had
    /// all been received on `request.from`: each is verified with `verifier`, the verified ones are
    /// deduplicated (first in file order wins) and aggregated, the others counted as rejected. The
    /// outputs go to the same places as a spool run's, `DATA/agg/…/dt=DAY/`.
    ///
    /// Internally the verdicts are written as spool records to a temporary segment, so the same code
    /// reads them as reads the receiver's spool.
    @discardableResult
    package func runInput(files: [String], verifier: PostbackVerifier) throws -> DaySummary {
        let day = request.from
        guard request.to == day else { throw AggregationError.usage("--input aggregates one day: give --date, not a range") }
        guard !files.isEmpty else { throw AggregationError.usage("no --input file given") }
        // The same rule as for the spool: a day that is not over may still get postbacks (a relay's
        // next export), so it is published only on request, and marked partial.
        if day > request.today { throw AggregationError.futureDay(day, today: request.today) }
        if day >= request.today, !request.allowOpenDay { throw AggregationError.openDay(day) }
        return try withWorkDirectory { (work) in
            try aggregateInput(files: files, verifier: verifier, day: day, work: work)
        }
    }

    private func aggregateInput(files: [String], verifier: PostbackVerifier, day: UTCDay, work: String) throws
        -> DaySummary
    {
        let verifiedPath = "\(work)/input-verified.jsonl"
        let rejectedPath = "\(work)/input-rejected.jsonl"
        let (verifiedOut, rejectedOut) = try AggregationError.onFailure { () throws(SystemCallError) in
            (try OutputFile(path: verifiedPath), try OutputFile(path: rejectedPath))
        }
        var reports: [SegmentReport] = []
        let receivedAt = Self.inputReceivedAt(day)
        for file in files {
            var status = stat()
            if file != "-", stat(file, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
                throw AggregationError.usage(
                    "--input \(file) is a directory: give files of postbacks (JSON Lines, one postback per line); "
                        + "to aggregate a receiver's store, use --data DIR without --input")
            }
            let reader: RecordReader
            do {
                reader = try RecordReader(path: file)
            } catch {
                throw AggregationError.input(error)
            }
            var report = SegmentReport(name: file, spool: nil)
            var objectRecords = 0
            // What `postback verify` would say of the first record that did not verify: the reason a
            // file with no postback in it is the wrong file (an array, an over-long line).
            var firstProblem: String?
            var batch: [InputRecord] = []
            func flush() throws {
                let results = Self.verify(batch, verifier: verifier, workers: request.workers)
                for (record, result) in zip(batch, results) {
                    if firstProblem == nil, !result.isVerified {
                        let line = record.source.hasPrefix(file + ":") ? "line \(record.source.dropFirst(file.count + 1)): " : ""
                        firstProblem = line + (result.reason ?? result.status.rawValue)
                    }
                    // What a receiver would quarantine is not counted: it goes with the rejected, with its reason.
                    let quarantine = result.quarantineReason.map {
                        "quarantined (\($0.rawValue)): "
                            + (result.reason
                                ?? result.flags.filter { $0.action == .unrecognized }.map(\.summary).joined(separator: "; "))
                    }
                    let spoolRecord = SpoolRecord(
                        receivedAt: receivedAt, writer: "input", route: "file-import", result: result, body: record.bytes,
                        reason: quarantine)
                    let counted = result.isVerified && quarantine == nil
                    if counted { report.postbacks += 1 } else { report.rejected += 1 }
                    try AggregationError.onFailure { () throws(SystemCallError) in
                        try (counted ? verifiedOut : rejectedOut).append(spoolRecord.encoded())
                    }
                }
                batch.removeAll(keepingCapacity: true)
            }
            while true {
                let next: InputRecord?
                do {
                    next = try reader.next()
                } catch {
                    throw AggregationError.input(error)
                }
                guard let record = next else { break }
                report.lines += 1
                if record.problem == nil, Self.looksLikeObject(record.bytes) { objectRecords += 1 }
                batch.append(record)
                if batch.count >= 4096 { try flush() }
            }
            try flush()
            // A file with no JSON object in it is the wrong file, not a day of rejected postbacks.
            guard objectRecords > 0 else {
                throw AggregationError.usage(
                    "--input \(file) holds no JSON postback (\(firstProblem ?? "it is empty")): --input takes JSON Lines, "
                        + "one postback object per line, or a file holding one postback")
            }
            (report.bytes, report.sha256) = try Self.checksum(file)
            reports.append(report)
        }
        try AggregationError.onFailure { () throws(SystemCallError) in
            try verifiedOut.close()
            try rejectedOut.close()
        }
        let tasks = [
            SegmentTask(path: verifiedPath, name: "input", spool: .postbacks, ordinal: 0, size: verifiedOut.bytesWritten),
            SegmentTask(path: rejectedPath, name: "input-rejected", spool: .rejected, ordinal: 1, size: rejectedOut.bytesWritten),
        ]
        let table = try DayAggregator.run(
            day: day, tasks: tasks, keysOnly: false, earlierKeyFiles: [], keyFile: "\(work)/keys.bin",
            workDirectory: work, workers: request.workers)
        table.segments = reports
        return try render(table, lookback: []).write()
    }

    /// The first byte that is not white space (or a byte order mark) opens an object.
    private static func looksLikeObject(_ bytes: [UInt8]) -> Bool {
        for byte in bytes where ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains(byte) { return byte == UInt8(ascii: "{") }
        return false
    }

    private static func verify(_ batch: [InputRecord], verifier: PostbackVerifier, workers: Int) -> [VerificationResult] {
        let slices = max(1, min(workers, batch.count / 64))
        let parts = (0..<slices).map { _ in ResultSlot<[VerificationResult]>() }
        let chunk = (batch.count + slices - 1) / slices
        try? Parallel.run(workers: slices, tasks: slices) { (_, task) in
            let range = (task * chunk)..<min(batch.count, (task + 1) * chunk)
            parts[task].value = verifier.verify(records: batch[range])
        }
        return parts.flatMap { $0.value ?? [] }
    }

    private static func checksum(_ path: String) throws -> (Int, String) {
        guard path != "-" else { return (0, "") }
        let hasher = SHA256Hasher()
        var total = 0
        try AggregationError.onFailure { () throws(SystemCallError) in
            try FileDescriptorIO.forEachChunk(ofFile: path) { chunk in
                hasher.update(chunk)
                total += chunk.count
            }
        }
        return (total, hasher.finalize().description)
    }
}
