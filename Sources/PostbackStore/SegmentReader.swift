package import Basics
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a spool segment record by record.
///
/// Appends are only acknowledged after fdatasync, so the only damage a crash can leave is a torn last
/// line: one without its newline, or whose bytes stop mid-record. That line is reported as `.tornTail`
/// and never merged with anything. A bad line *before* the end is not a crash artefact; it is reported
/// as `.corrupt` so it is seen, not silently skipped. One exception: a line holding a NUL byte is
/// torn wherever it is. No record holds one (JSON escapes it), and a power cut leaves them: a file
/// whose size reached the disk before its data reads back zeros there, and a later page of the
/// same unsynced write can survive after them (issue 28, `scripts/power-loss`). Nothing in such a
/// line was acknowledged, since its bytes were never synced.
package final class SegmentReader {
    package enum Entry {
        case record(SpoolRecord, line: Int)
        /// The last line, incomplete: skipped.
        case tornTail(line: Int, bytes: Int)
        /// A complete line that is not a valid record.
        case corrupt(line: Int, reason: String)
    }

    /// Records are at most a 64 KiB body, escaped; this leaves room and still bounds memory.
    package static let maximumLineBytes = 4 << 20

    package let path: String
    private let fd: Int32
    private let lines: LineReader
    private var pending: LineReader.Line?
    private var primed = false

    package init(path: String) throws(RecordReader.IOError) {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError(operation: "open", path: path, errorNumber: errno) }
        lines = LineReader(fd: fd, path: path, maximumLineBytes: Self.maximumLineBytes)
    }

    deinit { close(fd) }

    /// Bytes consumed so far.
    package var bytesRead: Int { lines.bytesRead }

    /// One line of a segment with the rules that need no parse applied: a last line without its
    /// newline is a torn tail, an over-long line is corrupt. Recovery reads segments this way and
    /// parses only what its fast path cannot; `next()` parses every complete line.
    package enum RawLine {
        /// A newline-terminated line within the limit; `isLast` when no line follows it.
        case complete(bytes: [UInt8], line: Int, length: Int, isLast: Bool)
        case tornTail(line: Int, bytes: Int)
        case tooLong(line: Int, bytes: Int)
    }

    package func nextLine() throws(RecordReader.IOError) -> RawLine? {
        if !primed {
            pending = try lines.next()
            primed = true
        }
        guard let line = pending else { return nil }
        pending = try lines.next()
        if !line.endsWithNewline { return .tornTail(line: line.number, bytes: line.length) }
        if line.isTooLong { return .tooLong(line: line.number, bytes: line.length) }
        return .complete(bytes: line.bytes, line: line.number, length: line.length, isLast: pending == nil)
    }

    /// A line that is not a record and holds a NUL byte: zeros a power cut left (see above), torn
    /// wherever it is. Asked only of lines that failed to parse.
    package static func isPowerCutDamage(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.contains(0)
    }

    package func next() throws(RecordReader.IOError) -> Entry? {
        switch try nextLine() {
        case nil: return nil
        case .tornTail(let line, let bytes): return .tornTail(line: line, bytes: bytes)
        case .tooLong(let line, let length): return .corrupt(line: line, reason: Self.tooLong(length))
        case .complete(let bytes, let line, let length, let isLast):
            do {
                return .record(try SpoolRecord(line: bytes), line: line)
            } catch {
                // A torn write can also end exactly where a later append began, leaving a complete-looking
                // final line; at the tail that is still a crash artefact.
                return isLast || Self.isPowerCutDamage(bytes)
                    ? .tornTail(line: line, bytes: length) : .corrupt(line: line, reason: error.description)
            }
        }
    }

    package static func tooLong(_ length: Int) -> String { "line of \(length) bytes exceeds \(maximumLineBytes)" }
}
