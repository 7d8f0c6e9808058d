#if canImport(Glibc)
    import Glibc
#endif

/// Reads a file descriptor line by line through a 1 MiB buffer, never keeping more than
/// `maximumLineBytes` of one line: a longer line is reported (with its length) but not stored.
package final class LineReader {
    package struct Line: Sendable {
        /// 1-based.
        package let number: Int
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
    private let maximumLineBytes: Int
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var bufferStart = 0
    private var bufferEnd = 0
    private var atEOF = false
    private var lineNumber = 0

    /// Bytes consumed so far.
    package private(set) var bytesRead = 0

    /// Reads from `fd` (which the caller owns and closes); `path` is only for error messages.
    package init(fd: Int32, path: String, maximumLineBytes: Int) {
        self.fd = fd
        self.path = path
        self.maximumLineBytes = maximumLineBytes
    }

    package func next() throws(RecordReader.IOError) -> Line? {
        var collected: [UInt8] = []
        var length = 0
        var tooLong = false
        while true {
            if bufferStart == bufferEnd {
                if atEOF { break }
                try fill()
                if bufferStart == bufferEnd { break }
            }
            let available = bufferEnd - bufferStart
            let start = bufferStart
            let newline: Int? = buffer.withUnsafeBufferPointer { pointer in
                guard let found = memchr(pointer.baseAddress! + start, 0x0A, available) else { return nil }
                return pointer.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
            }
            let end = newline ?? bufferEnd
            length += end - bufferStart
            if !tooLong {
                if length > maximumLineBytes {
                    tooLong = true
                    collected = []
                } else {
                    collected.append(contentsOf: buffer[bufferStart..<end])
                }
            }
            bytesRead += end - bufferStart + (newline == nil ? 0 : 1)
            bufferStart = newline.map { $0 + 1 } ?? bufferEnd
            if newline != nil {
                return finish(collected, length: length, tooLong: tooLong, newline: true)
            }
        }
        if length == 0 && !tooLong { return nil }
        return finish(collected, length: length, tooLong: tooLong, newline: false)
    }

    private func finish(_ bytes: [UInt8], length: Int, tooLong: Bool, newline: Bool) -> Line {
        lineNumber += 1
        var bytes = bytes
        if bytes.last == 0x0D { bytes.removeLast() }  // CRLF
        return Line(number: lineNumber, bytes: bytes, length: length, isTooLong: tooLong, endsWithNewline: newline)
    }

    private func fill() throws(RecordReader.IOError) {
        bufferStart = 0
        bufferEnd = 0
        let count: Int
        do {
            count = try FileDescriptorIO.read(fd, into: &buffer, path: path)
        } catch {
            throw RecordReader.IOError(path: path, message: error.reason)
        }
        if count == 0 { atEOF = true }
        bufferEnd = count
    }
}
