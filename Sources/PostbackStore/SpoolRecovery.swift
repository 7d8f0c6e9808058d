package import Basics
import Dispatch
import Locking
import Postbacks
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a receiver learns from the store at start-up: the dedup keys already stored (by every
/// writer), and the next free segment number for its own writer id.
///
/// Recovery never repairs or appends to an old segment. A torn last line (a crash between write and
/// fdatasync, never acknowledged) is skipped and reported; the writer then starts a new segment, so
/// the torn bytes are never merged with a later record.
package struct SpoolRecovery: Sendable {
    /// A damaged line found while scanning.
    package struct Damage: Sendable {
        package let path: String
        package let line: Int
        /// `torn tail` or why the line is not a record.
        package let problem: String
    }

    package var dedupIndex = DedupIndex()
    /// The quarantine's keys (`QuarantineKey`) of today and yesterday (`RecentDedupIndex`), so a
    /// retried quarantined body is stored once.
    package var quarantineIndex = RecentDedupIndex()
    /// The next sequence number for this writer, per spool.
    package var nextSequence: [StoreLayout.Spool: Int] = [:]
    package var recordsScanned = 0
    package var segmentsScanned = 0
    package var damage: [Damage] = []
    /// Segments that could not be read at all.
    package var unreadable: [String] = []

    /// Scans `layout` for `writerID`. Only the postbacks spool is read line by line (for dedup keys),
    /// every segment fully parsed so a damaged line is never taken for a stored postback; segments are
    /// read in parallel, one per core. The rejected spool is only listed, for its sequence numbers;
    /// the quarantine is read for its keys of the days `RecentDedupIndex` keeps (up to `today`), and
    /// only listed before them. A spool directory that cannot be listed is an error, not an empty spool.
    package static func scan(
        layout: StoreLayout, writerID: String, today: UTCDay = UTCTimestamp.now().day
    ) throws(StoreLayout.ListingError) -> SpoolRecovery {
        var recovery = SpoolRecovery()
        var postbackSegments: [String] = []
        var quarantineSegments: [(path: String, day: UTCDay)] = []
        let firstQuarantineDay = RecentDedupIndex.firstKeptDay(newest: today)
        for spool in StoreLayout.Spool.allCases {
            var highest = 0
            for day in try layout.days(spool) {
                for segment in try layout.segments(spool, day: day) {
                    if segment.writer == writerID { highest = max(highest, segment.sequence) }
                    if spool == .postbacks { postbackSegments.append(segment.path) }
                    if spool == .unverifiable, day >= firstQuarantineDay { quarantineSegments.append((segment.path, day)) }
                }
            }
            recovery.nextSequence[spool] = highest + 1
        }
        recovery.readQuarantineKeys(quarantineSegments)
        let paths = postbackSegments
        let results = Locked([Int: SegmentScan]())
        DispatchQueue.concurrentPerform(iterations: paths.count) { position in
            let scan = SegmentScan(path: paths[position])
            results.withLock { $0[position] = scan }
        }
        let scans = results.withLock { $0 }
        recovery.dedupIndex.reserveCapacity(scans.values.reduce(0) { $0 + $1.keys.count })
        for position in postbackSegments.indices {
            guard let scan = scans[position] else { continue }
            recovery.segmentsScanned += 1
            recovery.recordsScanned += scan.records
            for (key, values) in zip(scan.keys, scan.values) { recovery.dedupIndex.insert(key, values: values) }
            recovery.damage += scan.damage
            if let problem = scan.unreadable { recovery.unreadable.append(problem) }
        }
        return recovery
    }
}

extension SpoolRecovery {
    /// The quarantine is small (it has a daily byte budget) and read whole. A line or segment that
    /// cannot be read is reported as damage but does not refuse the start: the worst it costs is a
    /// second quarantined copy of a retried body, which is never counted.
    fileprivate mutating func readQuarantineKeys(_ segments: [(path: String, day: UTCDay)]) {
        for (path, day) in segments {
            do {
                let reader = try SegmentReader(path: path)
                while let entry = try reader.next() {
                    switch entry {
                    case .record(let record, _):
                        quarantineIndex.insert(
                            QuarantineKey.make(status: record.status, dedupKey: record.dedupKey, body: record.body), day: day)
                    case .tornTail(let line, let bytes):
                        damage.append(Damage(path: path, line: line, problem: "torn tail (\(bytes) bytes), skipped"))
                    case .corrupt(let line, let reason):
                        damage.append(Damage(path: path, line: line, problem: reason))
                    }
                }
            } catch {
                damage.append(Damage(path: path, line: 0, problem: "quarantine segment not readable: \(error)"))
            }
        }
    }
}

/// What one segment holds, read on its own (so segments can be read in parallel).
///
/// Lines come from `SegmentReader.nextLine()`, so the rules are `SegmentReader`'s (a last line
/// without its newline, or a last line that does not parse, is a torn tail; any other bad line is
/// corrupt), but each complete line goes through `FastSpoolLineParser` first (the aggregator's fast path, which answers only for verified
/// records it can prove `SpoolRecord(line:)` accepts) and reaches the full parser otherwise. A full
/// parse costs 13–17 µs a record, 7–13 s before a store of a million records can serve.
/// Tests compare this scan with one through `SegmentReader` on damaged segments.
struct SegmentScan: Sendable {
    var keys: [String] = []
    /// The unsigned values of each key's record, in `keys`' order.
    var values: [UnsignedValues] = []
    var records = 0
    var damage: [SpoolRecovery.Damage] = []
    var unreadable: String?
    /// Lines the fast path left to the full parser (for tests and benchmarks).
    var fullyParsed = 0

    init(path: String) {
        let reader: SegmentReader
        do { reader = try SegmentReader(path: path) } catch {
            unreadable = "\(path): \(error)"
            return
        }
        do {
            while let raw = try reader.nextLine() {
                switch raw {
                case .tornTail(let line, let bytes):
                    damage.append(.init(path: path, line: line, problem: Self.tornTail(bytes)))
                case .tooLong(let line, let length):
                    damage.append(.init(path: path, line: line, problem: SegmentReader.tooLong(length)))
                case .complete(let bytes, let line, let length, let isLast):
                    if let verdict = Self.fastVerdict(bytes) {
                        add(status: verdict.status, dedupKey: verdict.dedupKey, values: verdict.values)
                        continue
                    }
                    fullyParsed += 1
                    do {
                        let record = try SpoolRecord(line: bytes)
                        add(
                            status: record.status, dedupKey: record.dedupKey,
                            values: record.attribution.map(UnsignedValues.init) ?? .unknown)
                    } catch {
                        // As in SegmentReader: an unparsable *last* line, or one with a NUL byte, is
                        // what a torn write leaves.
                        let torn = isLast || SegmentReader.isPowerCutDamage(bytes)
                        damage.append(.init(path: path, line: line, problem: torn ? Self.tornTail(length) : error.description))
                    }
                }
            }
        } catch {
            unreadable = "\(path): \(error)"
        }
    }

    private mutating func add(status: VerificationStatus, dedupKey: String?, values: UnsignedValues) {
        records += 1
        if let dedupKey, status == .verified {
            keys.append(dedupKey)
            self.values.append(values)
        }
    }

    private static func tornTail(_ bytes: Int) -> String { "torn tail (\(bytes) bytes), skipped" }

    /// What the full parser would say about `line` (status and dedup key), from the fast path; nil
    /// leaves the line to `SpoolRecord(line:)`.
    static func fastVerdict(_ line: [UInt8]) -> (status: VerificationStatus, dedupKey: String?, values: UnsignedValues)? {
        line.withUnsafeBytes { bytes in
            guard let summary = FastSpoolLineParser.parse(bytes) else { return nil }
            let key = summary.dedupKey.map { String(decoding: bytes[$0.start..<$0.start + $0.count], as: UTF8.self) }
            return (.verified, key, summary.hasFields ? summary.fields.unsignedValues(line: bytes) : .unknown)
        }
    }
}
