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
        case "DOUBLE": return .double
        default:
            // "DECIMAL(38, 6)"
            let digits = sql.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            precondition(sql.hasPrefix("DECIMAL(") && digits.count == 2, "no Parquet type for \(sql)")
            return .decimal(precision: digits[0], scale: digits[1])
        }
    }

    /// Whether the column may be empty (null): every column but the postback counts, which are 0 on
    /// a row that has none (a rejected record's row).
    package var isNullable: Bool {
        if case .cohort(let column) = self { return !column.isCount }
        return !isPostbackCount
    }
}

/// A table's Parquet file, made from the CSV file the job rendered for it: the same rows in the same
/// order, each field typed as its column declares (`AggregateColumn.parquetType`), an empty field
/// null. Reading the rendered lines back keeps one source for every value (the CSV and the Parquet
/// file cannot disagree) at the cost of one pass over bytes already in memory, a block of rows at a
/// time (`CSVColumnReader`), since it is most of what Parquet adds to the job's time.
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
        let failure = csv.withUnsafeBufferPointer { bytes in
            parquetColumns.withUnsafeMutableBufferPointer { parquetColumns in
                CSVColumnReader.appendRows(of: bytes, from: reader.position, to: parquetColumns)
            }
        }
        if let failure {
            throw .parquet(
                "\(table): line \(failure.line)\(failure.column.map { ", " + columns[$0].name } ?? ""): \(failure.problem)")
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
    package static func textRows(parquet bytes: [UInt8]) throws -> (header: [String], rows: [[String?]]) {
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
        case (.integer(let bits), .double): return Double(bitPattern: UInt64(bitPattern: bits)).description
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
    /// The first byte not read yet.
    private(set) var position = 0

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

    /// A quoted field's text, its doubled quotes made single and a neutralised cell's `'` taken off
    /// (`SpreadsheetCell`).
    func unescape(_ field: Field, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        var index = field.range.lowerBound
        while index < field.range.upperBound {
            out.append(bytes[index])
            index += bytes[index] == 0x22 ? 2 : 1
        }
        if SpreadsheetCell.isNeutralised(out) { out.removeFirst() }
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
