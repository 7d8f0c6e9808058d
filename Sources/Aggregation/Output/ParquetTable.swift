import Basics
package import Parquet

extension AggregateColumn {
    /// The column's Parquet type, from its declared `sqlType` (one declaration decides both): VARCHAR
    /// is a STRING, BIGINT an INT64, INTEGER an INT32, DATE a DATE, DECIMAL(p, s) a 16-byte DECIMAL.
    package var parquetType: ParquetType {
        let sql = sqlType
        switch sql {
        case "VARCHAR": return .string
        case "BIGINT": return .int64
        case "INTEGER": return .int32
        case "BOOLEAN": return .boolean
        case "DATE": return .date
        default:
            // "DECIMAL(38, 6)"
            let digits = sql.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            precondition(sql.hasPrefix("DECIMAL(") && digits.count == 2, "no Parquet type for \(sql)")
            return .decimal(precision: digits[0], scale: digits[1])
        }
    }

    /// Whether the column may be empty (null): every column but the postback counts, which are 0 on
    /// a row that has none (a rejected record's row).
    package var isNullable: Bool { !isPostbackCount }
}

/// A table's Parquet file, made from the CSV file the job rendered for it: the same rows in the same
/// order, each field typed as its column declares (`AggregateColumn.parquetType`), an empty field
/// null. Reading the rendered lines back keeps one source for every value (the CSV and the Parquet
/// file cannot disagree) at the cost of one pass over bytes already in memory.
package enum ParquetTable {
    package static func encode(
        csv: [UInt8], table: String, columns: [AggregateColumn], rowGroupRows: Int = ParquetWriter.defaultRowGroupRows
    ) throws(AggregationError) -> [UInt8] {
        var parquetColumns = columns.map { ParquetColumn(name: $0.name, type: $0.parquetType, nullable: $0.isNullable) }
        var reader = RenderedCSV(csv)
        guard let header = reader.nextRecord(), header.map({ String(decoding: $0 ?? [], as: UTF8.self) }) == columns.map(\.name)
        else {
            throw .parquet("\(table): the rendered header is not the declared columns")
        }
        var line = 1
        var fields = [RenderedCSV.Field](repeating: RenderedCSV.Field(range: 0..<0, quoted: false), count: columns.count)
        var scratch: [UInt8] = []
        while let count = reader.nextFields(into: &fields) {
            line += 1
            guard count == columns.count else {
                throw .parquet("\(table): line \(line) has \(count) fields, not \(columns.count)")
            }
            let failure = csv.withUnsafeBufferPointer { csv -> (Int, ParquetError)? in
                for index in 0..<count {
                    let field = fields[index]
                    do {
                        if field.quoted {
                            reader.unescape(field, into: &scratch)
                            try scratch.withUnsafeBufferPointer { (text) throws(ParquetError) in
                                try append(text, to: &parquetColumns[index])
                            }
                        } else {
                            try append(
                                field.range.isEmpty ? nil : UnsafeBufferPointer(rebasing: csv[field.range]),
                                to: &parquetColumns[index])
                        }
                    } catch {
                        return (index, (error as? ParquetError) ?? .invalidValue("\(error)"))
                    }
                }
                return nil
            }
            if let (index, error) = failure { throw .parquet("\(table): line \(line), \(columns[index].name): \(error)") }
        }
        do {
            return try ParquetWriter.write(parquetColumns, rowGroupRows: rowGroupRows)
        } catch {
            throw .parquet("\(table): \(error)")
        }
    }

    /// A Parquet table file read back as the CSV would have it: the column names, then each row's
    /// fields as text (`true`/`false`, dates `YYYY-MM-DD`, amounts as the shortest exact decimal),
    /// nil for null. What `postback report` reads when a day was published as Parquet only.
    package static func textRows(parquet bytes: [UInt8]) throws(ParquetError) -> (header: [String], rows: [[String?]]) {
        let columns = try ParquetReader.read(bytes)
        let rows = columns.first?.rows ?? 0
        var table = [[String?]](repeating: [], count: rows)
        for column in columns {
            for (row, value) in column.values.enumerated() { table[row].append(value.map { text($0, column.type) }) }
        }
        return (columns.map(\.name), table)
    }

    private static func text(_ value: ParquetValue, _ type: ParquetType) -> String {
        switch (value, type) {
        case (.string(let bytes), _): return String(decoding: bytes, as: UTF8.self)
        case (.integer(let number), .boolean): return number == 1 ? "true" : "false"
        case (.integer(let days), .date): return UTCDay(daysSinceEpoch: Int(days)).description
        case (.integer(let number), _): return String(number)
        case (.decimal(let unscaled), .decimal(_, let scale)):
            var power: Int128 = 1
            for _ in 0..<scale { power *= 10 }
            let magnitude = unscaled.magnitude
            let whole = String(magnitude / UInt128(power))
            var fraction = String(magnitude % UInt128(power))
            fraction = String(repeating: "0", count: scale - fraction.count) + fraction
            while fraction.hasSuffix("0") { fraction.removeLast() }
            return (unscaled < 0 ? "-" : "") + whole + (fraction.isEmpty ? "" : "." + fraction)
        case (.decimal(let unscaled), _): return String(unscaled)
        }
    }

    private static func append(_ field: UnsafeBufferPointer<UInt8>?, to column: inout ParquetColumn) throws(ParquetError) {
        guard let field else {
            try column.appendNull()
            return
        }
        switch column.type {
        case .string:
            column.append(string: field)
        case .int64:
            guard let value = integer(field) else { throw .invalid(field) }
            column.append(value)
        case .int32:
            guard let value = integer(field), Int32(exactly: value) != nil else { throw .invalid(field) }
            column.append(value)
        case .boolean:
            if field.elementsEqual("true".utf8) {
                column.append(1)
            } else if field.elementsEqual("false".utf8) {
                column.append(0)
            } else {
                throw .invalid(field)
            }
        case .date:
            guard field.count == 10, field[4] == 0x2D, field[7] == 0x2D,
                let year = integer(UnsafeBufferPointer(rebasing: field[0..<4])),
                let month = integer(UnsafeBufferPointer(rebasing: field[5..<7])),
                let day = integer(UnsafeBufferPointer(rebasing: field[8..<10]))
            else { throw .invalid(field) }
            column.append(Int64(UTCDay(year: Int(year), month: Int(month), day: Int(day)).daysSinceEpoch))
        case .decimal(_, let scale):
            guard let value = decimal(field, scale: scale) else { throw .invalid(field) }
            column.append(decimal: value)
        }
    }

    /// A decimal integer with an optional leading minus.
    private static func integer(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = text.first == 0x2D
        let digits = negative ? UnsafeBufferPointer(rebasing: text.dropFirst()) : text
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - 0x30) * (negative ? -1 : 1))
            guard !overflow, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// An exact decimal (`2.99`, `150`, `-0.5`) as an unscaled integer with `scale` places.
    private static func decimal(_ text: UnsafeBufferPointer<UInt8>, scale: Int) -> Int128? {
        var value: Int128 = 0
        var fractionDigits = 0
        var seenPoint = false
        var digits = 0
        let negative = text.first == 0x2D
        for byte in text.dropFirst(negative ? 1 : 0) {
            if byte == 0x2E, !seenPoint {
                seenPoint = true
                continue
            }
            guard byte >= 0x30, byte <= 0x39, digits < 38 else { return nil }
            if seenPoint {
                fractionDigits += 1
                guard fractionDigits <= scale else { return nil }
            }
            value = value * 10 + Int128(byte - 0x30)
            digits += 1
        }
        guard digits > 0 else { return nil }
        for _ in fractionDigits..<scale { value *= 10 }
        return negative ? -value : value
    }
}

extension ParquetError {
    fileprivate static func invalid(_ field: UnsafeBufferPointer<UInt8>) -> ParquetError {
        .invalidValue(String(decoding: field, as: UTF8.self))
    }
}

/// The records of a CSV file as `CSVLine` writes it (RFC 4180: `\n` line ends, quotes doubled inside
/// quoted fields); an unquoted empty field is null.
struct RenderedCSV {
    /// A field's bytes in the file: inside the quotes (still doubled) for a quoted one.
    struct Field {
        var range: Range<Int>
        var quoted: Bool
    }

    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next record's fields, written into `fields` from its start (as many as fit); returns how
    /// many the record has, or nil at the end.
    mutating func nextFields(into fields: inout [Field]) -> Int? {
        guard position < bytes.count else { return nil }
        var count = 0
        let end = bytes.count
        return bytes.withUnsafeBufferPointer { bytes in
            while true {
                var field = Field(range: position..<position, quoted: false)
                if position < end, bytes[position] == 0x22 {
                    field.quoted = true
                    position += 1
                    let start = position
                    while position < end {
                        if bytes[position] == 0x22 {
                            if position + 1 < end, bytes[position + 1] == 0x22 {
                                position += 2
                                continue
                            }
                            break
                        }
                        position += 1
                    }
                    field.range = start..<position
                    position += 1  // the closing quote
                } else {
                    let start = position
                    while position < end, bytes[position] != 0x2C, bytes[position] != 0x0A { position += 1 }
                    field.range = start..<position
                }
                if count < fields.count { fields[count] = field } else { fields.append(field) }
                count += 1
                guard position < end, bytes[position] == 0x2C else {
                    position += 1  // the line's end
                    return count
                }
                position += 1
            }
        }
    }

    /// A quoted field's text, its doubled quotes made single.
    func unescape(_ field: Field, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        var index = field.range.lowerBound
        while index < field.range.upperBound {
            out.append(bytes[index])
            index += bytes[index] == 0x22 ? 2 : 1
        }
    }

    /// The next record's fields as bytes (nil for null), or nil at the end.
    mutating func nextRecord() -> [[UInt8]?]? {
        var fields: [Field] = []
        guard let count = nextFields(into: &fields) else { return nil }
        var scratch: [UInt8] = []
        return fields.prefix(count).map { field -> [UInt8]? in
            if field.quoted {
                unescape(field, into: &scratch)
                return scratch
            }
            return field.range.isEmpty ? nil : Array(bytes[field.range])
        }
    }
}
