/// Builds RFC 4180 CSV: fields separated by commas, quoted only when they hold a comma, a quote or
/// a line break (quotes doubled), `\n` line ends. A nil field is empty (SQL NULL for DuckDB, Spark and
/// BigQuery); an empty string is written `""` so the two stay apart. A text field a spreadsheet would
/// evaluate (`=…`, `+…`, `-…`, `@…`, a tab or CR first; not a plain number) is written quoted with a
/// `'` before it (`SpreadsheetCell`).
///
/// Noncopyable, with its own buffer: a row is a few dozen appends and this runs once per output
/// row, where an array's uniqueness and capacity checks per byte showed in profiles.
import AggregateSchema
import Basics
import PostbackStore

package struct CSVLine: ~Copyable {
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private(set) var count = 0
    private var fields = 0

    package init(capacity: Int = 512) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    /// The bytes so far, valid until the next change.
    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }

    package var array: [UInt8] { Array(bytes) }

    package mutating func reset() {
        count = 0
        fields = 0
    }

    package mutating func field(_ text: String?) {
        separate()
        guard var text else { return }
        text.withUTF8 { appendText(UnsafeRawBufferPointer($0)) }
    }

    /// Bytes of a string (quoted when needed, like `field(_: String?)`).
    mutating func field(bytes text: [UInt8]?) {
        separate()
        if let text { text.withUnsafeBytes { appendText($0) } }
    }

    /// Text already in bytes (quoted when needed, like `field(_: String?)`).
    mutating func field(text: UnsafeRawBufferPointer) {
        separate()
        appendText(text)
    }

    /// A string stored in a row key.
    mutating func field(slice: ByteSlice?, of key: UnsafeRawBufferPointer) {
        separate()
        if let slice { appendText(key.slice(slice)) }
    }

    mutating func field(_ number: Int64?) {
        separate()
        if let number { appendDecimal(number) }
    }

    mutating func field(_ number: Int?) { field(number.map(Int64.init)) }

    mutating func field(_ flag: Bool?) {
        separate()
        guard let flag else { return }
        if flag {
            appendByte(0x74)
            appendByte(0x72)
            appendByte(0x75)
            appendByte(0x65)
        } else {
            appendByte(0x66)
            appendByte(0x61)
            appendByte(0x6C)
            appendByte(0x73)
            appendByte(0x65)
        }
    }

    /// An amount as its shortest exact decimal (`Money.description`), without building a String.
    mutating func field(_ money: Money?) {
        separate()
        guard let parts = money?.shortestDecimal else { return }
        if parts.isNegative { appendByte(0x2D) }
        appendDecimal(Int64(parts.whole))
        guard parts.fractionDigits > 0 else { return }
        appendByte(0x2E)
        var divisor: UInt64 = 1
        for _ in 1..<parts.fractionDigits { divisor *= 10 }
        while divisor > 0 {
            appendByte(UInt8(parts.fraction / divisor % 10) + 0x30)
            divisor /= 10
        }
    }

    package mutating func endLine() { appendByte(0x0A) }

    /// Appends fields already encoded by another `CSVLine` (at least one field, no line end).
    mutating func appendRaw(_ encoded: UnsafeRawBufferPointer) {
        separate()
        appendBytes(encoded)
    }

    // MARK: Bytes

    private mutating func separate() {
        if fields > 0 { appendByte(0x2C) }
        fields += 1
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        var size = capacity * 2
        while size < count + extra { size *= 2 }
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        fresh.update(from: storage, count: count)
        storage.deallocate()
        storage = fresh
        capacity = size
    }

    @inline(__always)
    private mutating func appendByte(_ byte: UInt8) {
        reserve(1)
        storage[count] = byte
        count += 1
    }

    private mutating func appendBytes(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, source.count > 0 else { return }
        reserve(source.count)
        (storage + count).update(from: base.assumingMemoryBound(to: UInt8.self), count: source.count)
        count += source.count
    }

    private mutating func appendText(_ utf8: UnsafeRawBufferPointer) {
        if utf8.isEmpty {
            appendByte(0x22)
            appendByte(0x22)
            return
        }
        let neutralise = SpreadsheetCell.mayNeedNeutralising(first: utf8[0]) && SpreadsheetCell.needsNeutralising(utf8)
        var needsQuotes = neutralise
        for byte in utf8 where byte == 0x2C || byte == 0x22 || byte == 0x0A || byte == 0x0D {
            needsQuotes = true
            break
        }
        guard needsQuotes else {
            appendBytes(utf8)
            return
        }
        appendByte(0x22)
        if neutralise { appendByte(0x27) }
        for byte in utf8 {
            if byte == 0x22 { appendByte(0x22) }
            appendByte(byte)
        }
        appendByte(0x22)
    }

    private mutating func appendDecimal(_ value: Int64) {
        if value == 0 {
            appendByte(0x30)
            return
        }
        reserve(20)
        if value < 0 { appendByte(0x2D) }
        var magnitude = value.magnitude
        var digits = 0
        var scratch = magnitude
        while scratch > 0 {
            scratch /= 10
            digits += 1
        }
        var position = count + digits - 1
        while magnitude > 0 {
            storage[position] = UInt8(magnitude % 10) + 0x30
            magnitude /= 10
            position -= 1
        }
        count += digits
    }

    /// A header line.
    package static func header(_ names: [String]) -> [UInt8] {
        var line = CSVLine()
        for name in names { line.field(name) }
        line.endLine()
        return line.array
    }
}
