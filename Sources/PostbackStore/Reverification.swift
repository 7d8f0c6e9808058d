package import Basics
import Foundation
package import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// `postback reverify`: runs the current verifier again over `raw/rejected/` and `raw/unverifiable/`
/// for a range of days, and moves what now verifies into `raw/postbacks/`, keeping each record's
/// original `received_at`, writer and route.
///
/// Per day, in an order that a crash at any point cannot turn into a loss or a double count:
/// 1. every copy of a key that now verifies and is not stored yet is written to a new segment
///    `raw/postbacks/dt=DAY/part-reverify-NNNNNN.jsonl` (temporary file, fsync, rename, directory
///    fsync: the segment is there whole or not at all);
/// 2. then each source segment is rewritten without those lines, the same way.
/// A rerun finds the moved copies stored (same key, same `received_at`, same body) and only
/// finishes step 2 for them; a copy whose key was stored by a receiver is left where it is
/// (the receiver answered "duplicate" for such a copy: it was never a separate postback).
/// Every copy of a key is moved, not only the first: the nightly job keeps the first received
/// copy, as for copies from several receivers, and counts the rest in `duplicates_dropped`.
///
/// Only days before today (UTC) are taken, and not yesterday in the first ten minutes of today:
/// receivers may still append to the day's segments. A lock on the writer id `reverify` keeps two
/// runs apart.
package struct Reverification {
    package struct Moved: Sendable {
        package let source: String
        package let line: Int
        package let dedupKey: String
        package let receivedAt: UTCTimestamp
        /// The verdict it was stored with, and why.
        package let previousStatus: VerificationStatus
        package let previousReason: String?
        package let destination: String
    }

    package struct Report: Sendable {
        package var moved: [Moved] = []
        /// Copies moved by an interrupted run, now taken out of their source segment.
        package var completed = 0
        /// Now verified, but a receiver stored their key already.
        package var alreadyStored: [(source: String, line: Int, dedupKey: String)] = []
        /// Still not verified (or still not countable), by verdict.
        package var unchanged: [String: Int] = [:]
        /// Lines that are not records (left as they are).
        package var unreadable = 0
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(_ description: String) { self.description = description }
    }

    package static let writerID = "reverify"

    let layout: StoreLayout
    let verifier: PostbackVerifier
    /// Test hook: `POSTBACK_TEST_REVERIFY_KILL=destination|source` sends the process SIGKILL right
    /// after that step of the first day with moves, for the crash tests.
    let killPoint = ProcessInfo.processInfo.environment["POSTBACK_TEST_REVERIFY_KILL"]

    package init(layout: StoreLayout, verifier: PostbackVerifier) {
        self.layout = layout
        self.verifier = verifier
    }

    /// The last day `reverify` may take at `now`.
    package static func latestDay(now: UTCTimestamp = .now()) -> UTCDay {
        let today = now.day
        let sinceMidnight = now.microsecondsSinceEpoch - Int64(today.daysSinceEpoch) * 86_400_000_000
        return today.adding(days: sinceMidnight < 600_000_000 ? -2 : -1)
    }

    package func run(from: UTCDay, to: UTCDay) throws(Failure) -> Report {
        let lock: WriterLock
        do { lock = try WriterLock(layout: layout, writerID: Self.writerID) } catch { throw Failure(error.description) }
        defer { lock.release() }
        let stored = try storedCopies()
        var report = Report()
        var day = from
        while day <= to {
            try reverify(day: day, stored: stored, report: &report)
            day = day.adding(days: 1)
        }
        return report
    }

    /// What identifies a stored copy: a moved copy keeps its `received_at` and body.
    private struct Identity: Hashable {
        let receivedAt: Int64
        let body: [UInt8]
    }

    /// Every stored copy's key and identity, over all days: dedup is across the whole store.
    private func storedCopies() throws(Failure) -> [String: Set<Identity>] {
        var stored: [String: Set<Identity>] = [:]
        let days: [UTCDay]
        do { days = try layout.days(.postbacks) } catch { throw Failure(error.description) }
        for day in days {
            for segment in try segments(.postbacks, day: day) {
                for line in try lines(of: segment.path) {
                    guard let record = try? SpoolRecord(line: line.bytes), let key = record.dedupKey else { continue }
                    stored[key, default: []].insert(
                        Identity(receivedAt: record.receivedAt.microsecondsSinceEpoch, body: record.body))
                }
            }
        }
        return stored
    }

    private struct Candidate {
        let segment: String
        let line: Int
        let record: SpoolRecord
        let result: VerificationResult
        let key: String
    }

    private func reverify(day: UTCDay, stored: [String: Set<Identity>], report: inout Report) throws(Failure) {
        var toMove: [Candidate] = []
        var removals: [String: Set<Int>] = [:]
        var segmentLines: [String: [Line]] = [:]
        for spool in [StoreLayout.Spool.rejected, .unverifiable] {
            for segment in try segments(spool, day: day) {
                let lines = try lines(of: segment.path)
                segmentLines[segment.path] = lines
                for line in lines {
                    guard let record = try? SpoolRecord(line: line.bytes) else {
                        report.unreadable += 1
                        continue
                    }
                    let result = verifier.verify(body: record.body)
                    let countable =
                        result.isVerified && result.quarantineReason == nil
                        && (result.environment == .production || verifier.policy.allowsDevelopment)
                    guard countable, let key = result.dedupKey else {
                        report.unchanged[
                            result.quarantineReason.map { "quarantined (\($0.rawValue))" } ?? result.status.rawValue, default: 0] +=
                            1
                        continue
                    }
                    if let copies = stored[key] {
                        if copies.contains(Identity(receivedAt: record.receivedAt.microsecondsSinceEpoch, body: record.body)) {
                            removals[segment.path, default: []].insert(line.number)
                            report.completed += 1
                        } else {
                            report.alreadyStored.append((segment.path, line.number, key))
                        }
                        continue
                    }
                    toMove.append(Candidate(segment: segment.path, line: line.number, record: record, result: result, key: key))
                }
            }
        }
        if !toMove.isEmpty {
            // First received first, as a receiver would have seen them.
            toMove.sort { ($0.record.receivedAt, $0.segment, $0.line) < ($1.record.receivedAt, $1.segment, $1.line) }
            let destination = try nextDestination(day: day)
            var bytes: [UInt8] = []
            for candidate in toMove {
                let record = SpoolRecord(
                    receivedAt: candidate.record.receivedAt, writer: candidate.record.writer,
                    route: candidate.record.route, result: candidate.result, body: candidate.record.body)
                bytes.append(contentsOf: record.encoded())
                removals[candidate.segment, default: []].insert(candidate.line)
                report.moved.append(
                    Moved(
                        source: candidate.segment, line: candidate.line, dedupKey: candidate.key,
                        receivedAt: candidate.record.receivedAt, previousStatus: candidate.record.status,
                        previousReason: candidate.record.reason, destination: destination))
            }
            do {
                try DurableFile.makeDirectories(layout.partition(.postbacks, day: day))
                try seal(bytes, of: destination, day: day)
                try DurableFile.write(bytes, to: destination)
            } catch {
                throw Failure("cannot write \(destination): \(error); nothing was moved for \(day)")
            }
            if killPoint == "destination" { kill(getpid(), SIGKILL) }
        }
        for (path, numbers) in removals.sorted(by: { $0.key < $1.key }) {
            var kept: [UInt8] = []
            for line in segmentLines[path] ?? [] where !numbers.contains(line.number) {
                kept.append(contentsOf: line.bytes)
                if line.endsWithNewline { kept.append(0x0A) }
            }
            do {
                try seal(kept, of: path, day: day)
                try DurableFile.write(kept, to: path)
            } catch {
                throw Failure("cannot rewrite \(path): \(error); its moved records are stored, a rerun finishes the move")
            }
            if killPoint == "source" { kill(getpid(), SIGKILL) }
        }
    }

    /// Records the seal of a segment about to be written whole (before it is written: a crash in
    /// between leaves the old bytes, which match their own seal, since a segment matches any of its seals).
    private func seal(_ bytes: [UInt8], of path: String, day: UTCDay) throws(SystemCallError) {
        guard let spool = StoreLayout.Spool.allCases.first(where: { path.hasPrefix(layout.spoolDirectory($0) + "/") }) else {
            return
        }
        try SegmentSeals.Recorder(root: layout.root, spool: spool, writerID: Self.writerID)
            .record(path, day: day, SegmentSeals.seal(of: bytes))
    }

    private func nextDestination(day: UTCDay) throws(Failure) -> String {
        let existing = try segments(.postbacks, day: day).filter { $0.writer == Self.writerID }.map(\.sequence).max() ?? 0
        return layout.partition(.postbacks, day: day) + "/"
            + StoreLayout.segmentName(writer: Self.writerID, sequence: existing + 1)
    }

    private func segments(_ spool: StoreLayout.Spool, day: UTCDay) throws(Failure) -> [StoreLayout.Segment] {
        do { return try layout.segments(spool, day: day) } catch { throw Failure(error.description) }
    }

    /// A segment's lines as stored (without their newline), so that rewriting it keeps every other
    /// line byte for byte, torn or not.
    private struct Line {
        let number: Int
        let bytes: [UInt8]
        let endsWithNewline: Bool
    }

    private func lines(of path: String) throws(Failure) -> [Line] {
        let bytes: [UInt8]
        do { bytes = try FileBytes.read(path: path, limit: 1 << 30) } catch { throw Failure(error.description) }
        var lines: [Line] = []
        var start = 0
        var number = 0
        while start < bytes.count {
            number += 1
            let end = bytes[start...].firstIndex(of: 0x0A)
            lines.append(Line(number: number, bytes: Array(bytes[start..<(end ?? bytes.count)]), endsWithNewline: end != nil))
            start = (end ?? bytes.count) + 1
        }
        return lines
    }
}
