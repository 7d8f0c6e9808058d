#if canImport(Glibc)
    import Glibc
#endif

/// Reads a file descriptor line by line through a 1 MiB chunk, never keeping more than
/// `maximumLineBytes` of one line: a longer line is reported (with its length) but not stored.
/// The line rules are `LineSplitter`'s.
package final class LineReader {
    package struct Line: Sendable {
        /// 1-based.
        package let number: Int
        /// Where the line starts in the input.
        package let offset: Int
        /// Without the newline (and without a CR before it).
        package let bytes: [UInt8]
        /// The full length, also when too long to keep.
        package let length: Int
        package let isTooLong: Bool
        /// False only for a last line with no newline after it: in an append-only log, a torn write.
        package let endsWithNewline: Bool

        package var hasContent: Bool { bytes.contains { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D } }
    }

    private let fd: Int32
    private let path: String
    private var lines: LineSplitter
    private var atEOF = false

    /// Bytes consumed so far.
    package var bytesRead: Int { lines.bytesConsumed }

    /// Reads from `fd` (which the caller owns and closes); `path` is only for error messages.
    package init(fd: Int32, path: String, maximumLineBytes: Int) {
        self.fd = fd
        self.path = path
        lines = LineSplitter(maximumLineBytes: maximumLineBytes, chunkBytes: 1 << 20)
    }

    package func next() throws(RecordReader.IOError) -> Line? {
        while true {
            if let line = lines.next() { return Line(line, endsWithNewline: true) }
            if atEOF { return lines.finish().map { Line($0, endsWithNewline: false) } }
            let chunk = try lines.fill { (room) throws(SystemCallError) -> Int in
                try FileDescriptorIO.read(fd, into: room, path: path)
            }
            if chunk.isEmpty { atEOF = true }
        }
    }
}

extension LineReader.Line {
    init(_ line: LineSplitter.Line, endsWithNewline: Bool) {
        self.init(
            number: line.number, offset: line.offset, bytes: line.bytes.map { Array($0) } ?? [], length: line.length,
            isTooLong: line.bytes == nil,
            endsWithNewline: endsWithNewline)
    }
}
