#if canImport(Glibc)
    import Glibc
#endif

/// The line rules of the append-only files this package reads (spool segments, record files), in
/// one place: a line ends at `\n`, and a CR before it is not part of it; a line longer than
/// `maximumLineBytes` is reported with its length but never kept; bytes after the last newline at
/// the end of the input are an unterminated line (in an append-only log, a torn write).
///
/// Zero-copy: the caller reads each chunk into the splitter's buffer (`fill`), then takes the
/// complete lines (`next()` until nil) as views into that buffer, valid until the next `fill`;
/// `finish()` gives the unterminated rest. `LineReader` (records, segments line by line) and the
/// aggregate job's segment scanner (whole segments, checksummed as they are read) both split with it.
package struct LineSplitter: ~Copyable {
    package struct Line {
        /// Without the newline (and a CR before it); nil for a line longer than the limit.
        package let bytes: UnsafeRawBufferPointer?
        /// 1-based.
        package let number: Int
        /// Where the line starts in the input.
        package let offset: Int
        /// The full length without the newline (a CR before it included), also when too long to keep.
        package let length: Int
    }

    private let maximumLineBytes: Int
    private let chunkBytes: Int
    /// Room for the longest line kept plus a chunk, so a chunk always fits behind a partial line.
    private let buffer: UnsafeMutableRawPointer
    private let capacity: Int
    /// Bytes in `buffer`.
    private var filled = 0
    /// Where the newline search goes on (everything before it was searched).
    private var scanFrom = 0
    /// Where the current (incomplete) line starts in `buffer`.
    private var lineStart = 0
    /// The input offset of `buffer[0]`.
    private var bufferOffset = 0
    /// The current line outgrew the limit: its bytes so far are dropped, only counted.
    private var skippingLongLine = false
    private var longLineLength = 0
    /// Lines returned so far (including an unterminated last one).
    package private(set) var lineCount = 0

    package init(maximumLineBytes: Int, chunkBytes: Int) {
        self.maximumLineBytes = maximumLineBytes
        self.chunkBytes = chunkBytes
        capacity = maximumLineBytes + chunkBytes
        buffer = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Input bytes taken as lines so far (through the newline of the last line returned).
    package var bytesConsumed: Int { bufferOffset + lineStart }

    /// Reads the next chunk with `read`, which writes into the space it is given and returns how
    /// many bytes it wrote (0 at the end of the input). Returns those bytes (for a checksum).
    /// Call it once `next()` has returned nil; lines returned before are no longer valid.
    package mutating func fill<E: Error>(_ read: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E)
        -> UnsafeRawBufferPointer
    {
        precondition(scanFrom == filled, "LineSplitter.fill before every line was taken")
        compact()
        let room = UnsafeMutableRawBufferPointer(start: buffer + filled, count: min(chunkBytes, capacity - filled))
        let got = try read(room)
        let chunk = UnsafeRawBufferPointer(start: buffer + filled, count: got)
        filled += got
        return chunk
    }

    /// Takes `chunk` (of any size, as a stream delivers it) and calls `body` with each line it
    /// completes: `fill` and `next()` for a caller that is handed its bytes.
    package mutating func feed<E: Error>(_ chunk: UnsafeRawBufferPointer, _ body: (Line) throws(E) -> Void) throws(E) {
        var rest = chunk[...]
        while !rest.isEmpty {
            _ = fill { room in
                let count = min(room.count, rest.count)
                room.copyMemory(from: UnsafeRawBufferPointer(rebasing: rest.prefix(count)))
                rest = rest.dropFirst(count)
                return count
            }
            while let line = next() { try body(line) }
        }
    }

    /// The next complete line of the bytes read so far; nil when they hold no further newline.
    package mutating func next() -> Line? {
        guard scanFrom < filled, let found = memchr(buffer + scanFrom, 0x0A, filled - scanFrom) else {
            scanFrom = filled
            return nil
        }
        let newline = UnsafeRawPointer(buffer).distance(to: UnsafeRawPointer(found))
        let start = lineStart
        scanFrom = newline + 1
        lineStart = newline + 1
        return line(start: start, end: newline)
    }

    /// At the end of the input, once `next()` has returned nil: the unterminated last line, if any.
    package mutating func finish() -> Line? {
        precondition(scanFrom == filled, "LineSplitter.finish before every line was taken")
        guard skippingLongLine || filled > lineStart else { return nil }
        let start = lineStart
        lineStart = filled
        return line(start: start, end: filled)
    }

    /// The line from `start` to `end` (its newline, or the end of the input) in `buffer`.
    @inline(__always)
    private mutating func line(start: Int, end: Int) -> Line {
        lineCount += 1
        let offset = bufferOffset + start - (skippingLongLine ? longLineLength : 0)
        let length = end - start + (skippingLongLine ? longLineLength : 0)
        skippingLongLine = false
        guard length <= maximumLineBytes else { return Line(bytes: nil, number: lineCount, offset: offset, length: length) }
        var count = end - start
        if count > 0, buffer.load(fromByteOffset: end - 1, as: UInt8.self) == 0x0D { count -= 1 }
        return Line(
            bytes: UnsafeRawBufferPointer(start: buffer + start, count: count), number: lineCount, offset: offset,
            length: length)
    }

    /// Moves the incomplete line to the front of the buffer, or drops its bytes (counting them) once
    /// it is longer than any line kept.
    private mutating func compact() {
        let partial = filled - lineStart
        if skippingLongLine || partial > maximumLineBytes {
            if !skippingLongLine { longLineLength = 0 }
            skippingLongLine = true
            longLineLength += partial
            bufferOffset += filled
            filled = 0
        } else if lineStart > 0 {
            if partial > 0 { memmove(buffer, buffer + lineStart, partial) }
            bufferOffset += lineStart
            filled = partial
        }
        lineStart = 0
        scanFrom = filled
    }
}
