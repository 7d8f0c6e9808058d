package import AggregateSchema
import Basics
package import Parquet

/// A table's Parquet file, made from the CSV file the job rendered for it: the same rows in the same
/// order, each field typed as its column declares (`AggregateColumn.type`), an empty field
/// null. Reading the rendered lines back keeps one source for every value (the CSV and the Parquet
/// file cannot disagree) at the cost of one pass over bytes already in memory, a block of rows at a
/// time (`CSVColumnReader`), since it is most of what Parquet adds to the job's time.
package enum ParquetTable {
    package static func encode(
        csv: [UInt8], table: String, columns: [AggregateColumn], rowGroupRows: Int = ParquetWriter.defaultRowGroupRows
    ) throws -> [UInt8] {
        var parquetColumns = columns.map { ParquetColumn(name: $0.name, type: $0.type.parquet, nullable: $0.isNullable) }
        var reader = RenderedCSV(csv)
        guard let header = reader.nextRecord(), header.map({ String(decoding: $0 ?? [], as: UTF8.self) }) == columns.map(\.name)
        else {
            throw AggregationError.parquet("\(table): the rendered header is not the declared columns")
        }
        let failure = csv.withUnsafeBufferPointer { bytes in
            parquetColumns.withUnsafeMutableBufferPointer { parquetColumns in
                CSVColumnReader.appendRows(of: bytes, from: reader.position, to: parquetColumns)
            }
        }
        if let failure {
            throw AggregationError.parquet(
                "\(table): line \(failure.line)\(failure.column.map { ", " + columns[$0].name } ?? ""): \(failure.problem)")
        }
        do {
            return try ParquetWriter.write(parquetColumns, rowGroupRows: rowGroupRows)
        } catch {
            throw AggregationError.parquet("\(table): \(error)")
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
