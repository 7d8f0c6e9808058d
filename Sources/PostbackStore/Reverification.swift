package import Basics
import Foundation
import PostbackCrypto
package import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// `postback reverify`: runs the current verifier again over `raw/rejected/` and `raw/unverifiable/`
/// for a range of days, and moves what the receiver's policy now stores (`AcceptancePolicy.decide`,
/// the door's own function: verified, an accepted ad network, development only where allowed) into
/// `raw/postbacks/`, keeping each record's original `received_at`, writer and route.
///
/// One day at a time, in memory that does not grow with the store: the day's segments are read a
/// line at a time, and only what now verifies is remembered (where it is, its key, its received_at
/// and the SHA-256 of its body); when there is any, the stored segments of every day are read a
/// line at a time for those keys alone; the records are written as they are read again, and each
/// source segment is rewritten by copying the byte ranges it keeps.
///
/// Per day, in an order that a crash at any point cannot turn into a loss or a double count:
/// 1. every copy of a key the policy now stores and that is not stored yet is written to a new segment
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
        /// Still not stored by the policy, by verdict (or the policy's reason: `not accepted (ad-network)`).
        package var unchanged: [String: Int] = [:]
        /// Lines that are not records (left as they are).
        package var unreadable = 0
    }

    package static let writerID = "reverify"

    let layout: StoreLayout
    let verifier: PostbackVerifier
    let acceptance: AcceptancePolicy
    /// Test hook: `POSTBACK_TEST_REVERIFY_KILL=destination|source` sends the process SIGKILL right
    /// after that step of the first day with moves, for the crash tests.
    let killPoint = ProcessInfo.processInfo.environment["POSTBACK_TEST_REVERIFY_KILL"]

    /// - Parameter acceptance: the receivers' policy (their `ad_network_ids` and `allow_development`).
    package init(layout: StoreLayout, verifier: PostbackVerifier, acceptance: AcceptancePolicy) {
        self.layout = layout
        self.verifier = verifier
        self.acceptance = acceptance
    }

    /// The last day `reverify` may take at `now`.
    package static func latestDay(now: UTCTimestamp = .now()) -> UTCDay {
        let today = now.day
        let sinceMidnight = now.microsecondsSinceEpoch - Int64(today.daysSinceEpoch) * 86_400_000_000
        return today.adding(days: sinceMidnight < 600_000_000 ? -2 : -1)
    }

    package func run(from: UTCDay, to: UTCDay) throws -> Report {
        let lock: WriterLock
        lock = try WriterLock(layout: layout, writerID: Self.writerID)
        defer { lock.release() }
        var report = Report()
        var day = from
        while day <= to {
            try reverify(day: day, report: &report)
            day = day.adding(days: 1)
        }
        return report
    }

    /// What identifies a stored copy: a moved copy keeps its `received_at` and body.
    private struct Identity: Hashable {
        let receivedAt: Int64
        let bodySHA256: String

        init(_ record: SpoolRecord) {
            receivedAt = record.receivedAt.microsecondsSinceEpoch
            bodySHA256 = SHA256.hash(record.body).description
        }
    }

    /// A copy the policy now stores: where it is (line and bytes, to take it out of its segment), and
    /// what identifies it. Its body is read again when it is moved, never kept.
    private struct Candidate {
        let segment: String
        let line: Int
        let bytes: Range<Int>
        let key: String
        let identity: Identity
    }

    private func reverify(day: UTCDay, report: inout Report) throws {
        var candidates: [Candidate] = []
        for spool in [StoreLayout.Spool.rejected, .unverifiable] {
            for segment in try segments(spool, day: day) {
                try forEachLine(of: segment.path) { line throws in
                    guard !line.isTooLong, let record = try? SpoolRecord(line: line.bytes) else {
                        report.unreadable += 1
                        return
                    }
                    let result = verifier.verify(body: record.body)
                    guard case .store = acceptance.decide(result), let key = result.dedupKey else {
                        report.unchanged[Self.verdict(result, acceptance.decide(result)), default: 0] += 1
                        return
                    }
                    candidates.append(
                        Candidate(
                            segment: segment.path, line: line.number,
                            bytes: line.offset..<line.offset + line.length + (line.endsWithNewline ? 1 : 0), key: key,
                            identity: Identity(record)))
                }
            }
        }
        guard !candidates.isEmpty else { return }
        let stored = try storedCopies(of: Set(candidates.map(\.key)))
        var removals: [String: [Range<Int>]] = [:]
        var toMove: [String: Set<Int>] = [:]
        for candidate in candidates {
            if let copies = stored[candidate.key] {
                if copies.contains(candidate.identity) {
                    removals[candidate.segment, default: []].append(candidate.bytes)
                    report.completed += 1
                } else {
                    report.alreadyStored.append((candidate.segment, candidate.line, candidate.key))
                }
                continue
            }
            toMove[candidate.segment, default: []].insert(candidate.line)
            removals[candidate.segment, default: []].append(candidate.bytes)
        }
        if !toMove.isEmpty {
            let destination = try nextDestination(day: day)
            let staged: StagedFile
            do {
                try DurableFile.makeDirectories(layout.partition(.postbacks, day: day))
                staged = try StagedFile(replacing: destination)
            } catch {
                throw StoreError.notMoved(to: destination, day: day, error)
            }
            let hasher = SHA256Hasher()
            var failure: SystemCallError?
            // In the order of the source segments; the nightly job orders copies by received_at.
            for (source, lines) in toMove.sorted(by: { $0.key < $1.key }) {
                try forEachLine(of: source) { line throws in
                    guard lines.contains(line.number), failure == nil, let record = try? SpoolRecord(line: line.bytes) else {
                        return
                    }
                    let result = verifier.verify(body: record.body)
                    let moved = SpoolRecord(
                        receivedAt: record.receivedAt, writer: record.writer, route: record.route, result: result,
                        body: record.body
                    ).encoded()
                    hasher.update(moved)
                    do throws(SystemCallError) { try staged.append(moved) } catch { failure = error }
                    report.moved.append(
                        Moved(
                            source: source, line: line.number, dedupKey: result.dedupKey ?? "",
                            receivedAt: record.receivedAt, previousStatus: record.status, previousReason: record.reason,
                            destination: destination))
                }
            }
            do {
                if let failure { throw failure }
                // The seal first: a crash before the rename leaves no segment, and a seal of nothing.
                try seal(SegmentSeals.Seal(size: staged.size, sha256: hasher.finalize().description), of: destination, day: day)
                try staged.commit()
            } catch {
                throw StoreError.notMoved(to: destination, day: day, error)
            }
            if killPoint == "destination" { kill(getpid(), SIGKILL) }
        }
        for (path, ranges) in removals.sorted(by: { $0.key < $1.key }) {
            do {
                try rewrite(path, without: ranges.sorted { $0.lowerBound < $1.lowerBound }, day: day)
            } catch {
                throw StoreError.notRewritten(path, error)
            }
            if killPoint == "source" { kill(getpid(), SIGKILL) }
        }
    }

    /// How `report.unchanged` names what the policy does not store.
    private static func verdict(_ result: VerificationResult, _ decision: AcceptancePolicy.Decision) -> String {
        switch decision {
        case .quarantine(let reason): return "quarantined (\(reason.rawValue))"
        case .reject(_, let policy?): return "not accepted (\(policy.rawValue))"
        case .reject(_, nil), .store: return result.status.rawValue
        }
    }

    /// The stored copies of `keys` (every day's `raw/postbacks/`: dedup is across the whole store),
    /// read a line at a time; only lines of those keys are parsed whole.
    private func storedCopies(of keys: Set<String>) throws -> [String: Set<Identity>] {
        var stored: [String: Set<Identity>] = [:]
        let days: [UTCDay]
        days = try layout.days(.postbacks)
        for day in days {
            for segment in try segments(.postbacks, day: day) {
                try forEachLine(of: segment.path) { line throws in
                    guard !line.isTooLong, let key = SpoolRecovery.dedupKey(ofLine: line.bytes), keys.contains(key),
                        let record = try? SpoolRecord(line: line.bytes)
                    else { return }
                    stored[key, default: []].insert(Identity(record))
                }
            }
        }
        return stored
    }

    /// Rewrites the segment at `path` without the byte ranges `removed` (sorted, whole lines), every
    /// other byte as it was, torn or not; a chunk at a time.
    private func rewrite(_ path: String, without removed: [Range<Int>], day: UTCDay) throws {
        let source = open(path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw SystemCallError(operation: "open", path: path, errorNumber: errno) }
        defer { close(source) }
        let staged = try StagedFile(replacing: path)
        let hasher = SHA256Hasher()
        var offset = 0
        var next = 0
        try FileDescriptorIO.forEachChunk(of: source, path: path) { (chunk) throws(SystemCallError) in
            var start = 0
            while start < chunk.count {
                let position = offset + start
                while next < removed.count, removed[next].upperBound <= position { next += 1 }
                var end = chunk.count
                if next < removed.count {
                    if removed[next].lowerBound <= position {
                        start = min(chunk.count, removed[next].upperBound - offset)
                        continue
                    }
                    end = min(end, removed[next].lowerBound - offset)
                }
                let kept = UnsafeRawBufferPointer(rebasing: chunk[start..<end])
                hasher.update(kept)
                try staged.append(kept)
                start = end
            }
            offset += chunk.count
        }
        try seal(SegmentSeals.Seal(size: staged.size, sha256: hasher.finalize().description), of: path, day: day)
        try staged.commit()
    }

    /// Records the seal of a segment about to be put in place whole (before the rename: a crash in
    /// between leaves the old bytes, which match their own seal, since a segment matches any of its seals).
    private func seal(_ seal: SegmentSeals.Seal, of path: String, day: UTCDay) throws {
        guard let spool = StoreLayout.Spool.allCases.first(where: { path.hasPrefix(layout.spoolDirectory($0) + "/") }) else {
            return
        }
        try SegmentSeals.Recorder(root: layout.root, spool: spool, writerID: Self.writerID).record(path, day: day, seal)
    }

    private func nextDestination(day: UTCDay) throws -> String {
        let existing = try segments(.postbacks, day: day).filter { $0.writer == Self.writerID }.map(\.sequence).max() ?? 0
        return layout.partition(.postbacks, day: day) + "/"
            + StoreLayout.segmentName(writer: Self.writerID, sequence: existing + 1)
    }

    private func segments(_ spool: StoreLayout.Spool, day: UTCDay) throws -> [StoreLayout.Segment] {
        try layout.segments(spool, day: day)
    }

    /// Calls `body` with each line of a segment, a line at a time (a line over
    /// `SegmentReader.maximumLineBytes` is not kept: `isTooLong`).
    private func forEachLine(of path: String, _ body: (LineReader.Line) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError(operation: "open", path: path, errorNumber: errno) }
        defer { close(fd) }
        let lines = LineReader(fd: fd, path: path, maximumLineBytes: SegmentReader.maximumLineBytes)
        while true {
            guard let line = try lines.next() else { return }
            try body(line)
        }
    }
}
