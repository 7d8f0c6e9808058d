public import Basics
import Postbacks

#if canImport(Glibc)
import Glibc
#endif

/// Reads a spool segment record by record.
///
/// Appends are only acknowledged after fdatasync, so the only damage a crash can leave is a torn last
/// line: one without its newline, or whose bytes stop mid-record. That line is reported as `.tornTail`
/// and never merged with anything. A bad line *before* the end is not a crash artefact; it is reported
/// as `.corrupt` so it is seen, not silently skipped.
public final class SegmentReader {
    public enum Entry {
        case record(SpoolRecord, line: Int)
        /// The last line, incomplete: skipped.
        case tornTail(line: Int, bytes: Int)
        /// A complete line that is not a valid record.
        case corrupt(line: Int, reason: String)
    }

    /// Records are at most a 64 KiB body, escaped; this leaves room and still bounds memory.
    public static let maximumLineBytes = 4 << 20

    public let path: String
    private let fd: Int32
    private let lines: LineReader
    private var pending: LineReader.Line?
    private var primed = false

    public init(path: String) throws(RecordReader.IOError) {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw RecordReader.IOError(path: path, message: String(cString: strerror(errno))) }
        lines = LineReader(fd: fd, path: path, maximumLineBytes: Self.maximumLineBytes)
    }

    deinit { close(fd) }

    /// Bytes consumed so far.
    public var bytesRead: Int { lines.bytesRead }

    public func next() throws(RecordReader.IOError) -> Entry? {
        if !primed {
            pending = try lines.next()
            primed = true
        }
        guard let line = pending else { return nil }
        pending = try lines.next()
        let isLast = pending == nil
        if !line.endsWithNewline { return .tornTail(line: line.number, bytes: line.length) }
        if line.isTooLong { return .corrupt(line: line.number, reason: "line of \(line.length) bytes exceeds \(Self.maximumLineBytes)") }
        do {
            return .record(try SpoolRecord(line: line.bytes), line: line.number)
        } catch {
            // A torn write can also end exactly where a later append began, leaving a complete-looking
            // final line; at the tail that is still a crash artefact.
            return isLast ? .tornTail(line: line.number, bytes: line.length) : .corrupt(line: line.number, reason: error.description)
        }
    }
}
