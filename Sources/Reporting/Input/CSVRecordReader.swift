import Basics

#if canImport(Glibc)
    import Glibc
#endif

/// Reads an RFC 4180 CSV file record by record through a fixed buffer, so a large partition never
/// has to fit in memory.
///
/// The aggregate tables' conventions (docs/aggregate.md, "Output"): `\n` line ends, fields quoted
/// only when they hold a comma, a quote or a line break (quotes doubled). An unquoted empty field is
/// null (`nil`); a quoted empty field (`""`) is the empty string; a neutralised cell (`"'=…"`,
/// `SpreadsheetCell`) is read without its `'`. Anything else — a quote inside an
/// unquoted field, text after a closing quote, an unterminated quote, invalid UTF-8 — is an error.
final class CSVRecordReader {
    /// Far above any row the aggregator writes; bounds memory on a damaged file.
    static let maximumRecordBytes = 1 << 20

    let path: String
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 256 << 10)
    private var position = 0
    private var end = 0
    private var atEOF = false
    private var line = 1

    /// The 1-based line on which the record last returned by `next()` started.
    private(set) var recordLine = 0

    /// Reads from `fd`, which the caller owns and closes; `path` names it in errors.
    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// The next record's fields, or nil at the end of the file.
    func next() throws(ReportError) -> [String?]? {
        var fields: [String?] = []
        var field: [UInt8] = []
        var recordBytes = 0
        var quoted = false  // the field began with a quote
        var inQuotes = false  // inside the quotes of a quoted field
        var quoteSeen = false  // inside quotes, just read a quote: an escaped quote or the closing one
        var started = false
        recordLine = line
        while true {
            guard let byte = try nextByte() else {
                guard started else { return nil }
                if inQuotes && !quoteSeen { throw malformed("unterminated quoted field") }
                fields.append(try finish(field, quoted: quoted))
                return fields
            }
            started = true
            recordBytes += 1
            if recordBytes > Self.maximumRecordBytes { throw malformed("record longer than \(Self.maximumRecordBytes) bytes") }
            if inQuotes {
                if quoteSeen {
                    quoteSeen = false
                    if byte == UInt8(ascii: "\"") {
                        field.append(byte)
                        continue
                    }
                    inQuotes = false  // that quote closed the field; this byte must end it
                } else {
                    if byte == UInt8(ascii: "\"") {
                        quoteSeen = true
                    } else {
                        if byte == 0x0A { line += 1 }
                        field.append(byte)
                    }
                    continue
                }
            }
            switch byte {
            case UInt8(ascii: ","):
                fields.append(try finish(field, quoted: quoted))
                field.removeAll(keepingCapacity: true)
                quoted = false
            case 0x0A:
                line += 1
                fields.append(try finish(field, quoted: quoted))
                return fields
            case UInt8(ascii: "\""):
                guard field.isEmpty, !quoted else { throw malformed("quote inside an unquoted field") }
                quoted = true
                inQuotes = true
            default:
                if quoted { throw malformed("text after the closing quote of a field") }
                field.append(byte)
            }
        }
    }

    private func finish(_ field: [UInt8], quoted: Bool) throws(ReportError) -> String? {
        if field.isEmpty { return quoted ? "" : nil }
        // A neutralised cell (`SpreadsheetCell`): the text without the `'` the writer put before it.
        let text = quoted && SpreadsheetCell.isNeutralised(field) ? field.dropFirst() : field[...]
        guard let text = String(validating: text, as: UTF8.self) else { throw malformed("a field is not valid UTF-8") }
        return text
    }

    private func malformed(_ reason: String) -> ReportError { .malformed(path: path, line: recordLine, reason: reason) }

    @inline(__always)
    private func nextByte() throws(ReportError) -> UInt8? {
        if position == end {
            if atEOF { return nil }
            try fill()
            if position == end { return nil }
        }
        let byte = buffer[position]
        position += 1
        return byte
    }

    private func fill() throws(ReportError) {
        position = 0
        end = 0
        let count: Int
        do { count = try FileDescriptorIO.read(fd, into: &buffer, path: path) } catch {
            throw .io(path: path, message: error.reason)
        }
        if count == 0 { atEOF = true }
        end = count
    }
}
