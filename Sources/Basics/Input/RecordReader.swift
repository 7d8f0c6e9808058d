#if canImport(Glibc)
    import Glibc
#endif

/// The UTF-8 byte-order mark some editors put in front of a file; readers skip it.
package let utf8ByteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

extension RecordReader {
    /// What to say when a directory is given where files of postbacks go: the files it holds, by
    /// the ending most of them have (`DIR/*.json` for Apple's samples, `DIR/*.jsonl` for exports).
    package static func directoryHint(_ directory: String) -> String {
        var counts: [String: Int] = [:]
        if let stream = opendir(directory) {
            defer { closedir(stream) }
            let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            while let entry = readdir(stream) {
                // The record is only as long as its name: read up to the NUL, never the whole d_name array.
                let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
                for ending in [".jsonl", ".json"] where name.hasSuffix(ending) {
                    counts[ending, default: 0] += 1
                    break
                }
            }
        }
        let ending = counts.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key ?? ".jsonl"
        let shown = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        return "is a directory; give the files in it (e.g. \(shown)/*\(ending))"
    }
}

/// One postback's bytes from an input file, with where it came from.
package struct InputRecord: Sendable {
    /// The file's path (or `-`), and the line the record starts on when the file holds several.
    private let label: String
    private let line: Int?
    package let bytes: [UInt8]
    /// Set when the record could not be read whole (too long); `bytes` is then empty.
    package let problem: String?

    /// `path` for a file holding one postback, `path:line` for JSON Lines (line of the record's
    /// start). Made when asked for: signing prints it only for a line it refuses.
    package var source: String { line.map { "\(label):\($0)" } ?? label }

    package init(source: String, bytes: [UInt8], problem: String?) {
        self.init(label: source, line: nil, bytes: bytes, problem: problem)
    }

    init(label: String, line: Int?, bytes: [UInt8], problem: String?) {
        self.label = label
        self.line = line
        self.bytes = bytes
        self.problem = problem
    }
}

/// Reads postbacks from a file or stdin as a stream, never holding more than one record.
///
/// The layout is decided by the first non-blank line:
/// - If it holds a complete JSON value, the file is JSON Lines: every non-blank line is one record, so a
///   torn or garbage line costs only that line.
/// - Otherwise (a pretty-printed object starting with `{` alone on a line), records are JSON values
///   that may span lines; one after another is fine.
///
/// A value that spans lines ends early, as a torn record the parser then rejects, when the next line
/// cannot belong to it: the line break falls inside a string (JSON strings hold no raw newline), or
/// the next line opens a new object at column 0. That line is read again as the start of the next
/// record, so a torn first line of a JSON Lines file costs that line only, not the ones after it.
///
/// A record longer than `maximumRecordBytes` is reported as a problem record and skipped without being
/// buffered, so a 100 MB line costs no memory. Line endings may be LF or CRLF.
package final class RecordReader {
    /// What reading records throws: the failed call, or a directory given as the input (`EISDIR`).
    package typealias IOError = SystemCallError

    package static let defaultMaximumRecordBytes = 1 << 20

    private let path: String
    private let label: String
    private let fd: Int32
    private let ownsDescriptor: Bool
    private let maximumRecordBytes: Int

    private let lines: LineReader

    private enum Layout { case undecided, jsonLines, documents }
    private var layout = Layout.undecided
    private var recordsReturned = 0
    private var lookahead: RawRecord?
    private var lookaheadPrimed = false
    /// A line read past the end of a torn multi-line value, to be read again as a record's start.
    private var pushedBack: LineReader.Line?

    /// Bytes consumed so far, and the file size when known, for progress display.
    package var bytesRead: Int { lines.bytesRead }
    package let totalBytes: Int?

    /// Whether a file's only record is named `path:line` too (JSON Lines tools), not just `path`.
    private var numbersEveryRecord = false

    /// Opens `path`; `-` means standard input.
    /// - Parameter numbersEveryRecord: name even a file's only record by its line (`path:1`).
    package convenience init(
        path: String, maximumRecordBytes: Int = RecordReader.defaultMaximumRecordBytes, numbersEveryRecord: Bool
    ) throws(IOError) {
        try self.init(path: path, maximumRecordBytes: maximumRecordBytes)
        self.numbersEveryRecord = numbersEveryRecord
    }

    /// Opens `path`; `-` means standard input.
    package init(path: String, maximumRecordBytes: Int = RecordReader.defaultMaximumRecordBytes) throws(IOError) {
        self.path = path
        self.maximumRecordBytes = maximumRecordBytes
        if path == "-" {
            fd = 0
            ownsDescriptor = false
            label = "<stdin>"
            totalBytes = nil
            lines = LineReader(fd: 0, path: path, maximumLineBytes: maximumRecordBytes)
        } else {
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { throw SystemCallError(operation: "open", path: path, errorNumber: errno) }
            var status = stat()
            guard fstat(opened, &status) == 0 else {
                let error = SystemCallError(operation: "fstat", path: path, errorNumber: errno)
                close(opened)
                throw error
            }
            if (status.st_mode & S_IFMT) == S_IFDIR {
                close(opened)
                throw SystemCallError(
                    operation: "read", path: path, errorNumber: EISDIR, detail: RecordReader.directoryHint(path))
            }
            fd = opened
            ownsDescriptor = true
            label = path
            totalBytes = (status.st_mode & S_IFMT) == S_IFREG ? Int(status.st_size) : nil
            lines = LineReader(fd: opened, path: path, maximumLineBytes: maximumRecordBytes)
        }
    }

    deinit {
        if ownsDescriptor { close(fd) }
    }

    /// The next record, or nil at the end of input. Throws only for read errors.
    package func next() throws(IOError) -> InputRecord? {
        if !lookaheadPrimed {
            lookahead = try readRawRecord()
            lookaheadPrimed = true
        }
        guard let current = lookahead else {
            if recordsReturned == 0 {
                recordsReturned = 1
                return InputRecord(source: label, bytes: [], problem: "empty input: no JSON postback found")
            }
            return nil
        }
        lookahead = try readRawRecord()
        let isOnlyRecord = recordsReturned == 0 && lookahead == nil && !numbersEveryRecord
        recordsReturned += 1
        return InputRecord(label: label, line: isOnlyRecord ? nil : current.line, bytes: current.bytes, problem: current.problem)
    }

    // MARK: Records

    private struct RawRecord {
        let line: Int
        let bytes: [UInt8]
        let problem: String?
    }

    private func nextLine() throws(IOError) -> LineReader.Line? {
        if let line = pushedBack {
            pushedBack = nil
            return line
        }
        guard let line = try lines.next() else { return nil }
        // Editors on Windows start files with a UTF-8 byte order mark: drop it, or a pretty-printed
        // postback would look like JSON Lines and become one malformed record per line.
        if line.number == 1, line.bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            return LineReader.Line(
                number: 1, offset: line.offset + 3, bytes: Array(line.bytes.dropFirst(3)), length: line.length - 3,
                isTooLong: line.isTooLong, endsWithNewline: line.endsWithNewline)
        }
        return line
    }

    private func readRawRecord() throws(IOError) -> RawRecord? {
        while true {
            guard let line = try nextLine() else { return nil }
            guard line.hasContent else {
                if line.isTooLong { return RawRecord(line: line.number, bytes: [], problem: tooLong(line)) }
                continue
            }
            if layout == .undecided {
                layout = line.isTooLong || !line.startsUnclosedValue ? .jsonLines : .documents
            }
            if line.isTooLong { return RawRecord(line: line.number, bytes: [], problem: tooLong(line)) }
            if layout == .jsonLines || !line.startsUnclosedValue {
                return RawRecord(line: line.number, bytes: line.bytes, problem: nil)
            }
            return try readMultilineRecord(startingWith: line)
        }
    }

    /// Accumulates lines until the JSON value that `first` opened is closed.
    private func readMultilineRecord(startingWith first: LineReader.Line) throws(IOError) -> RawRecord {
        var bytes = first.bytes
        var scanner = ValueScanner()
        scanner.scan(bytes)
        while !scanner.isComplete {
            guard let line = try nextLine() else { break }  // EOF: return what we have; the parser reports the truncation
            if scanner.isInString || line.opensObjectAtColumnZero {
                // `first` was torn: end it here (the parser reports it) and start again at `line`.
                // A complete object there means the file is JSON Lines after all.
                if !line.isTooLong && !line.startsUnclosedValue { layout = .jsonLines }
                pushedBack = line
                break
            }
            if line.isTooLong || bytes.count + line.bytes.count + 1 > maximumRecordBytes {
                return RawRecord(
                    line: first.number, bytes: [],
                    problem:
                        "the JSON value starting on line \(first.number) is longer than the \(maximumRecordBytes)-byte limit for one postback"
                )
            }
            bytes.append(0x0A)
            bytes.append(contentsOf: line.bytes)
            scanner.scan(line.bytes)
        }
        return RawRecord(line: first.number, bytes: bytes, problem: nil)
    }

    private func tooLong(_ line: LineReader.Line) -> String {
        "line \(line.number) is \(line.length) bytes, longer than the \(maximumRecordBytes)-byte limit for one postback"
    }
}

extension LineReader.Line {
    /// Pretty printers indent nested values, so `{` in the first column starts a new top-level value.
    /// A UTF-8 byte-order mark in front (a file saved by some editors) is skipped, as `Postback` does.
    var opensObjectAtColumnZero: Bool { contentAfterByteOrderMark.first == UInt8(ascii: "{") }

    private var contentAfterByteOrderMark: ArraySlice<UInt8> {
        bytes.starts(with: utf8ByteOrderMark) ? bytes.dropFirst(3) : bytes[...]
    }

    /// The line starts a JSON object or array that does not close on the same line.
    var startsUnclosedValue: Bool {
        guard let first = contentAfterByteOrderMark.first(where: { $0 != 0x20 && $0 != 0x09 }),
            first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
        else { return false }
        var scanner = ValueScanner()
        scanner.scan(bytes)
        return !scanner.isComplete
    }
}

/// Tracks string and nesting state across the bytes of a JSON value, to find where it ends without
/// parsing it. The parser proper checks it afterwards.
struct ValueScanner {
    private var depth = 0
    private(set) var isInString = false
    private var escaped = false
    private var started = false
    private(set) var isComplete = false

    mutating func scan(_ bytes: [UInt8]) {
        for byte in bytes {
            if isComplete { return }
            if isInString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    isInString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): isInString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                started = true
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if started && depth <= 0 { isComplete = true }
            default: break
            }
        }
    }
}
