/// Writes a Parquet file (Apache Parquet's `parquet.thrift` and Encodings.md) from whole columns: the
/// `PAR1` magic, each row group's column chunks (an optional dictionary page, then one v1 data page),
/// the Thrift-compact `FileMetaData` footer, its length and `PAR1` again.
///
/// - Definition levels (nullable columns only; no repeated fields, so no repetition levels) use the
///   RLE / bit-packing hybrid with width 1.
/// - A chunk is dictionary-encoded (a PLAIN dictionary page, RLE_DICTIONARY indices) when that is
///   smaller than PLAIN, and PLAIN otherwise; booleans are always PLAIN.
/// - Page bodies are compressed with zstd, unless that leaves a chunk no smaller (then the chunk is
///   UNCOMPRESSED: the codec is per chunk).
/// - Each chunk carries its statistics: `null_count`, and `min_value`/`max_value` in the column's
///   type-defined order (signed integers and decimals, strings as unsigned bytes), with
///   `column_orders` saying so; the deprecated signed-byte `min`/`max` are never written.
///
/// Nothing depends on the clock or the environment: the same columns give the same bytes.
package enum ParquetWriter {
    /// The footer's `created_by`, in the `<application> version <version>` form readers parse (a
    /// form they cannot parse makes parquet-mr distrust string statistics). Fixed, not the release, so
    /// a new release republishes identical files; change it when the written bytes change.
    package static let createdBy = "postback-parquet version 1.0.0"
    /// Rows per row group (pyarrow's default order of magnitude; a day's table is usually one).
    package static let defaultRowGroupRows = 1 << 20
    /// A dictionary larger than this (its PLAIN bytes) is not used: the chunk is written PLAIN.
    static let dictionaryLimit = 1 << 20

    package static func write(_ columns: [ParquetColumn], rowGroupRows: Int = defaultRowGroupRows) throws
        -> [UInt8]
    {
        precondition(rowGroupRows > 0)
        let rows = columns.first?.rows ?? 0
        for column in columns where column.rows != rows {
            throw ParquetError.rowCountsDiffer(column.name, rows: column.rows, expected: rows)
        }
        var out: [UInt8] = Array("PAR1".utf8)
        var rowGroups: [RowGroupMeta] = []
        var valueCursor = [Int](repeating: 0, count: columns.count)
        var start = 0
        let compressor = Zstd.Compressor()
        while start < rows {
            let end = min(rows, start + rowGroupRows)
            var chunks: [ChunkMeta] = []
            for (index, column) in columns.enumerated() {
                chunks.append(
                    try ChunkEncoder.write(
                        column, rows: start..<end, firstValue: &valueCursor[index], to: &out, compressor: compressor))
            }
            rowGroups.append(RowGroupMeta(rows: end - start, chunks: chunks, ordinal: rowGroups.count))
            start = end
        }
        var footer = ThriftCompactWriter()
        footer.structure { fileMetaData(&$0, columns: columns, rows: rows, rowGroups: rowGroups) }
        guard footer.bytes.count <= Int(Int32.max) else { throw ParquetError.tooLarge("the footer") }
        out.append(contentsOf: footer.bytes)
        ParquetBytes.appendLittleEndian(UInt32(footer.bytes.count), to: &out)
        out.append(contentsOf: Array("PAR1".utf8))
        return out
    }

    // MARK: FileMetaData

    private static func fileMetaData(
        _ w: inout ThriftCompactWriter, columns: [ParquetColumn], rows: Int, rowGroups: [RowGroupMeta]
    ) {
        w.field(1, i32: 2)  // version
        // The schema, flattened depth first: the root (a group of every column), then the columns.
        w.field(2, structs: [nil] + columns.map { Optional($0) }) { w, column in
            if let column {
                schemaElement(&w, column)
            } else {
                w.field(4, string: "schema")
                w.field(5, i32: Int32(columns.count))
            }
        }
        w.field(3, i64: Int64(rows))
        w.field(4, structs: rowGroups) { w, group in rowGroup(&w, group, columns: columns) }
        w.field(6, string: createdBy)
        // column_orders: TypeDefinedOrder for every column, so readers use min_value/max_value.
        w.field(7, structs: columns) { w, _ in w.field(1, structure: { _ in }) }
    }

    private static func schemaElement(_ w: inout ThriftCompactWriter, _ column: ParquetColumn) {
        w.field(1, i32: column.type.physical.rawValue)
        if case .decimal = column.type { w.field(2, i32: 16) }  // type_length
        w.field(3, i32: column.nullable ? 1 : 0)  // OPTIONAL : REQUIRED
        w.field(4, string: column.name)
        switch column.type {
        case .string:
            w.field(6, i32: 0)  // converted_type UTF8
            w.field(10) { $0.field(1) { _ in } }  // logicalType STRING
        case .date:
            w.field(6, i32: 6)  // DATE
            w.field(10) { $0.field(6) { _ in } }
        case .decimal(let precision, let scale):
            w.field(6, i32: 5)  // DECIMAL
            w.field(7, i32: Int32(scale))
            w.field(8, i32: Int32(precision))
            w.field(10) {
                $0.field(5) {
                    $0.field(1, i32: Int32(scale))
                    $0.field(2, i32: Int32(precision))
                }
            }
        case .int32, .int64, .boolean, .double:
            break
        }
    }

    private static func rowGroup(_ w: inout ThriftCompactWriter, _ group: RowGroupMeta, columns: [ParquetColumn]) {
        w.field(1, structs: Array(zip(columns, group.chunks))) { w, pair in
            let (column, chunk) = pair
            w.field(2, i64: Int64(chunk.startOffset))  // file_offset: where the chunk starts
            w.field(3) { columnMetaData(&$0, column, chunk) }
        }
        w.field(2, i64: Int64(group.chunks.reduce(0) { $0 + $1.uncompressedSize }))
        w.field(3, i64: Int64(group.rows))
        w.field(5, i64: Int64(group.chunks.first?.startOffset ?? 0))
        w.field(6, i64: Int64(group.chunks.reduce(0) { $0 + $1.compressedSize }))
        w.field(7, i16: Int16(truncatingIfNeeded: group.ordinal))
    }

    private static func columnMetaData(_ w: inout ThriftCompactWriter, _ column: ParquetColumn, _ chunk: ChunkMeta) {
        w.field(1, i32: column.type.physical.rawValue)
        w.field(
            2,
            i32s: chunk.dictionaryOffset == nil
                ? [Encoding.plain, Encoding.rle] : [Encoding.plain, Encoding.rle, Encoding.rleDictionary])
        w.field(3, strings: [column.name])
        w.field(4, i32: chunk.compressed ? 6 : 0)  // ZSTD or UNCOMPRESSED
        w.field(5, i64: Int64(chunk.rows))
        w.field(6, i64: Int64(chunk.uncompressedSize))
        w.field(7, i64: Int64(chunk.compressedSize))
        w.field(9, i64: Int64(chunk.dataOffset))
        if let dictionary = chunk.dictionaryOffset { w.field(11, i64: Int64(dictionary)) }
        w.field(12) { statistics(&$0, chunk.statistics) }
    }

    private static func statistics(_ w: inout ThriftCompactWriter, _ statistics: ChunkStatistics) {
        w.field(3, i64: Int64(statistics.nullCount))
        if let max = statistics.max { w.field(5, binary: max) }
        if let min = statistics.min { w.field(6, binary: min) }
    }
}

/// Parquet's `Encoding` values used here.
enum Encoding {
    static let plain: Int32 = 0
    static let rle: Int32 = 3
    static let rleDictionary: Int32 = 8
}

/// Parquet's physical `Type`.
enum PhysicalType: Int32 {
    case boolean = 0
    case int32 = 1
    case int64 = 2
    case double = 5
    case byteArray = 6
    case fixedLenByteArray = 7
}

extension ParquetType {
    var physical: PhysicalType {
        switch self {
        case .string: return .byteArray
        case .int32, .date: return .int32
        case .int64: return .int64
        case .boolean: return .boolean
        case .decimal: return .fixedLenByteArray
        case .double: return .double
        }
    }
}

struct RowGroupMeta {
    let rows: Int
    let chunks: [ChunkMeta]
    let ordinal: Int
}

struct ChunkStatistics {
    var nullCount = 0
    /// PLAIN-encoded (strings without their length), nil when every value is null.
    var min: [UInt8]?
    var max: [UInt8]?
}

struct ChunkMeta {
    let rows: Int
    let startOffset: Int
    let dictionaryOffset: Int?
    let dataOffset: Int
    let uncompressedSize: Int
    let compressedSize: Int
    /// zstd (or UNCOMPRESSED, when zstd did not make the chunk smaller).
    let compressed: Bool
    let statistics: ChunkStatistics
}
