import Basics

/// Reads rendered CSV (RFC 4180 as the job writes it: `\n` line ends, quotes doubled inside quoted
/// fields, an unquoted empty field null, a neutralised cell's `'` taken off: `SpreadsheetCell`) into typed columns, a block of rows at a time: first every
/// field's range, then each column's fields of the block in one pass with its type decided once.
/// One module holds the whole loop so that it specializes and inlines as one.
package enum CSVColumnReader {
    /// Where a line does not fit its columns: the 1-based line, the column (when one field is to
    /// blame) and what is wrong. A result of `appendRows`, not thrown: its caller names the table.
    package struct Failure: Sendable {
        package let line: Int
        package let column: Int?
        package let problem: String
    }

    /// Rows tokenized at a time: their field ranges (16 bytes each), column by column, stay in cache
    /// while each column reads its own in order.
    static let blockRows = 512

    /// Appends the records from byte `start` on (the line after the header) to `columns`, one field
    /// each; the first line that does not fit is returned.
    package static func appendRows(
        of bytes: UnsafeBufferPointer<UInt8>, from start: Int, to columns: UnsafeMutableBufferPointer<ParquetColumn>
    ) -> Failure? {
        var lines = 0
        for byte in bytes[start...] where byte == 0x0A { lines += 1 }
        for index in columns.indices { columns[index].reserveCapacity(lines) }
        let end = bytes.count
        let stride = columns.count
        var fields = [TextField](repeating: TextField(start: 0, end: 0), count: blockRows * stride)
        // Quoted fields' text with doubled quotes made single (rare: a comma, quote or newline inside).
        var unescaped: [UInt8] = []
        var position = start
        var line = 1
        while position < end {
            let blockFirstLine = line + 1
            unescaped.removeAll(keepingCapacity: true)
            var rows = 0
            let failure = fields.withUnsafeMutableBufferPointer { fields -> Failure? in
                while rows < blockRows, position < end {
                    line += 1
                    for index in 0..<stride {
                        if position < end, bytes[position] == 0x22 {
                            let textStart = unescaped.count
                            position += 1
                            while position < end {
                                if bytes[position] == 0x22 {
                                    guard position + 1 < end, bytes[position + 1] == 0x22 else { break }
                                    position += 1
                                }
                                unescaped.append(bytes[position])
                                position += 1
                            }
                            guard position < end else {
                                return Failure(line: line, column: index, problem: "an unterminated quote")
                            }
                            position += 1  // the closing quote
                            if SpreadsheetCell.isNeutralised(unescaped[textStart...]) { unescaped.remove(at: textStart) }
                            fields[index * blockRows + rows] = TextField(unescapedFrom: textStart, to: unescaped.count)
                        } else {
                            let fieldStart = position
                            position = ByteScan.firstFieldEnd(bytes.baseAddress!, from: position, end: end)
                            fields[index * blockRows + rows] = TextField(start: fieldStart, end: position)
                        }
                        let last = index == stride - 1
                        guard position < end, bytes[position] == (last ? 0x0A : 0x2C) else {
                            return Failure(line: line, column: nil, problem: "not \(stride) fields")
                        }
                        position += 1
                    }
                    rows += 1
                }
                return nil
            }
            if let failure { return failure }
            let columnFailure = fields.withUnsafeBufferPointer { fields in
                unescaped.withUnsafeBufferPointer { unescaped -> Failure? in
                    for index in columns.indices {
                        let columnFields = UnsafeBufferPointer(rebasing: fields[(index * blockRows)..<(index * blockRows + rows)])
                        if let (row, problem) = columns[index].append(fields: columnFields, bytes: bytes, unescaped: unescaped) {
                            return Failure(line: blockFirstLine + row, column: index, problem: problem.description)
                        }
                    }
                    return nil
                }
            }
            if let columnFailure { return columnFailure }
        }
        return nil
    }
}

/// One field of a block of CSV rows, as a tokenizer found it: the range of its text in the file's
/// bytes, or, for a quoted field, in the buffer its unescaped text was copied to (`start` is then
/// `-(offset + 1)`). An empty unquoted field is null; a quoted empty one the empty string.
struct TextField {
    var start: Int
    var end: Int

    init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }

    init(unescapedFrom start: Int, to end: Int) {
        self.start = -(start + 1)
        self.end = end
    }

    /// An empty unquoted field.
    var isNull: Bool { start == end && start >= 0 }

    /// The field's text, nil for null.
    func text(in bytes: UnsafeBufferPointer<UInt8>, unescaped: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        if start >= 0 { return start == end ? nil : UnsafeBufferPointer(rebasing: bytes[start..<end]) }
        return UnsafeBufferPointer(rebasing: unescaped[(-start - 1)..<end])
    }
}

extension ParquetColumn {
    /// Appends this column's fields of a block of rows, in row order. The same values as
    /// `append(text:)` field by field (a test holds them equal), with the type decided once per block
    /// and the values gathered in local arrays: appending to the stored arrays one field at a time
    /// costs a uniqueness and capacity check each, which was most of what Parquet added to the
    /// nightly job. Returns the first field that does not fit: its row within the block and what is
    /// wrong.
    mutating func append(
        fields: UnsafeBufferPointer<TextField>, bytes: UnsafeBufferPointer<UInt8>, unescaped: UnsafeBufferPointer<UInt8>
    ) -> (row: Int, problem: ParquetError)? {
        let blockRows = fields.count
        // Nulls first, in one pass: what is left below is a value in every row it reads.
        var flags: [Bool] = []
        if nullable {
            flags.reserveCapacity(blockRows)
            for row in 0..<blockRows { flags.append(!fields[row].isNull) }
        } else {
            for row in 0..<blockRows where fields[row].isNull {
                return (row, .nullInRequiredColumn(name, row: rows + row))
            }
        }
        switch type {
        case .string:
            var starts: [Int] = []
            starts.reserveCapacity(blockRows)
            var values: [UInt8] = []
            values.reserveCapacity(blockRows * 16)
            let base = stringBytes.count
            for row in 0..<blockRows {
                guard let field = fields[row].text(in: bytes, unescaped: unescaped) else { continue }
                values.append(contentsOf: field)
                starts.append(base + values.count)
            }
            stringBytes.append(contentsOf: values)
            stringStarts.append(contentsOf: starts)
        case .decimal(_, let scale):
            var values: [Int128] = []
            values.reserveCapacity(blockRows)
            for row in 0..<blockRows {
                guard let field = fields[row].text(in: bytes, unescaped: unescaped) else { continue }
                guard let value = Self.decimal(field, scale: scale) else { return (row, .invalid(field)) }
                values.append(value)
            }
            decimals.append(contentsOf: values)
        case .int64, .int32, .boolean, .date, .double:
            var values: [Int64] = []
            values.reserveCapacity(blockRows)
            let type = self.type
            for row in 0..<blockRows {
                guard let field = fields[row].text(in: bytes, unescaped: unescaped) else { continue }
                guard let value = Self.integerValue(field, type: type) else { return (row, .invalid(field)) }
                values.append(value)
            }
            integers.append(contentsOf: values)
        }
        present.append(contentsOf: flags)
        rows += blockRows
        return nil
    }
}
