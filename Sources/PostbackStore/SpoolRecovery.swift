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

    /// Scans `layout` for `writerID`. Only the postbacks spool is read line by line (for dedup keys);
    /// the rejected spool is only listed, for its sequence numbers.
    public static func scan(layout: StoreLayout, writerID: String) -> SpoolRecovery {
        var recovery = SpoolRecovery()
        for spool in StoreLayout.Spool.allCases {
            var highest = 0
            for day in layout.days(spool) {
                for segment in layout.segments(spool, day: day) {
                    if segment.writer == writerID { highest = max(highest, segment.sequence) }
                    if spool == .postbacks { recovery.index(segment.path) }
                }
            }
            recovery.nextSequence[spool] = highest + 1
        }
        return recovery
    }

    private mutating func index(_ path: String) {
        segmentsScanned += 1
        do {
            let reader = try SegmentReader(path: path)
            while let entry = try reader.next() {
                switch entry {
                case .record(let record, _):
                    recordsScanned += 1
                    if let key = record.dedupKey, record.status == .verified { dedupIndex.insert(key) }
                case .tornTail(let line, let bytes):
                    damage.append(Damage(path: path, line: line, problem: "torn tail (\(bytes) bytes), skipped"))
                case .corrupt(let line, let reason):
                    damage.append(Damage(path: path, line: line, problem: reason))
                }
            }
        } catch {
            unreadable.append("\(path): \(error)")
        }
    }
}
