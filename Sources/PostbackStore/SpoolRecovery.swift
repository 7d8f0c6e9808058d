import Locking
import Dispatch
import Synchronization

/// What a receiver learns from the store at start-up: the dedup keys already stored (by every
/// writer), and the next free segment number for its own writer id.
///
/// Recovery never repairs or appends to an old segment. A torn last line (a crash between write and
/// fdatasync, never acknowledged) is skipped and reported; the writer then starts a new segment, so
/// the torn bytes are never merged with a later record.
public struct SpoolRecovery: Sendable {
    /// A damaged line found while scanning.
    public struct Damage: Sendable {
        public let path: String
        public let line: Int
        /// `torn tail` or why the line is not a record.
        public let problem: String
    }

    public var dedupIndex = DedupIndex()
    /// The next sequence number for this writer, per spool.
    public var nextSequence: [StoreLayout.Spool: Int] = [:]
    public var recordsScanned = 0
    public var segmentsScanned = 0
    public var damage: [Damage] = []
    /// Segments that could not be read at all.
    public var unreadable: [String] = []

    /// Scans `layout` for `writerID`. Only the postbacks spool is read line by line (for dedup keys),
    /// every segment fully parsed so a damaged line is never taken for a stored postback; segments are
    /// read in parallel, one per core. The rejected spool is only listed, for its sequence numbers.
    public static func scan(layout: StoreLayout, writerID: String) -> SpoolRecovery {
        var recovery = SpoolRecovery()
        var postbackSegments: [String] = []
        for spool in StoreLayout.Spool.allCases {
            var highest = 0
            for day in layout.days(spool) {
                for segment in layout.segments(spool, day: day) {
                    if segment.writer == writerID { highest = max(highest, segment.sequence) }
                    if spool == .postbacks { postbackSegments.append(segment.path) }
                }
            }
            recovery.nextSequence[spool] = highest + 1
        }
        let paths = postbackSegments
        let results = Locked([Int: SegmentScan]())
        DispatchQueue.concurrentPerform(iterations: paths.count) { position in
            let scan = SegmentScan(path: paths[position])
            results.withLock { $0[position] = scan }
        }
        let scans = results.withLock { $0 }
        for position in postbackSegments.indices {
            guard let scan = scans[position] else { continue }
            recovery.segmentsScanned += 1
            recovery.recordsScanned += scan.records
            for key in scan.keys { recovery.dedupIndex.insert(key) }
            recovery.damage += scan.damage
            if let problem = scan.unreadable { recovery.unreadable.append(problem) }
        }
        return recovery
    }
}

/// What one segment holds, read on its own (so segments can be read in parallel).
private struct SegmentScan: Sendable {
    var keys: [String] = []
    var records = 0
    var damage: [SpoolRecovery.Damage] = []
    var unreadable: String?

    init(path: String) {
        do {
            let reader = try SegmentReader(path: path)
            while let entry = try reader.next() {
                switch entry {
                case .record(let record, _):
                    records += 1
                    if let key = record.dedupKey, record.status == .verified { keys.append(key) }
                case .tornTail(let line, let bytes):
                    damage.append(.init(path: path, line: line, problem: "torn tail (\(bytes) bytes), skipped"))
                case .corrupt(let line, let reason):
                    damage.append(.init(path: path, line: line, problem: reason))
                }
            }
        } catch {
            unreadable = "\(path): \(error)"
        }
    }
}
