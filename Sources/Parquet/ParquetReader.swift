/// Reads back the Parquet files `ParquetWriter` writes (and files like them): flat schemas of the
/// writer's types, v1 data pages, PLAIN or dictionary encoding, UNCOMPRESSED or ZSTD. Whole files
/// in memory: the aggregate tables of a day are small. Anything else (nested columns, v2 pages,
/// other codecs or encodings) is refused with `ParquetError.unsupported`, never guessed at.
package enum ParquetReader {
    /// Every column of the file, with every row's value.
    package static func read(_ bytes: [UInt8]) throws -> [ParquetColumn] {
        let magic = Array("PAR1".utf8)
        guard bytes.count >= 12, Array(bytes[0..<4]) == magic, Array(bytes[(bytes.count - 4)...]) == magic else {
            throw ParquetError.unsupported("not a Parquet file")
        }
        let footerLength = bytes[(bytes.count - 8)..<(bytes.count - 4)].reversed().reduce(0) { $0 << 8 | Int($1) }
        guard footerLength <= bytes.count - 12 else { throw ParquetError.unsupported("footer length \(footerLength)") }
        var thrift = ThriftCompactReader(bytes, at: bytes.count - 8 - footerLength)
        let metadata = try thrift.structure()

        // The schema: a root group, then one element per (flat) column.
        let schema = try metadata.list(2)
        guard let root = schema.first, try root.structure().int(5) == Int64(schema.count - 1) else {
            throw ParquetError.unsupported("a nested schema")
        }
        var columns: [ParquetColumn] = []
        for element in schema.dropFirst() {
            let fields = try element.structure()
            columns.append(
                ParquetColumn(name: try fields.string(4), type: try type(of: fields), nullable: try fields.int(3) == 1))
        }
        for group in try metadata.list(4) {
            let chunks = try group.structure().list(1)
            guard chunks.count == columns.count else { throw ParquetError.unsupported("a row group without every column") }
            for (index, chunk) in chunks.enumerated() {
                try readChunk(try chunk.structure().structure(3), of: &columns[index], in: bytes)
            }
        }
        return columns
    }

    private static func type(of element: ThriftStruct) throws -> ParquetType {
        let logical = element.fields[10].flatMap { try? $0.structure() }
        switch try element.int(1) {
        case 0: return .boolean
        case 1: return logical?.fields[6] != nil ? .date : .int32
        case 2: return .int64
        case 5: return .double
        case 6: return .string
        case 7:
            guard let decimal = try logical?.structure(5), try element.int(2) == 16 else {
                throw ParquetError.unsupported("a FIXED_LEN_BYTE_ARRAY that is not a 16-byte DECIMAL")
            }
            return .decimal(precision: Int(try decimal.int(2)), scale: Int(try decimal.int(1)))
        case let other: throw ParquetError.unsupported("physical type \(other)")
        }
    }

    private static func readChunk(_ meta: ThriftStruct, of column: inout ParquetColumn, in bytes: [UInt8])
        throws
    {
        let codec = try meta.int(4)
        guard codec == 0 || codec == 6 else { throw ParquetError.unsupported("codec \(codec)") }
        var remaining = Int(try meta.int(5))
        var position = Int(meta.fields[11] == nil ? try meta.int(9) : try meta.int(11))
        var dictionary: ParquetColumn?
        while remaining > 0 {
            var thrift = ThriftCompactReader(bytes, at: position)
            let header = try thrift.structure()
            let uncompressedSize = Int(try header.int(2))
            let compressedSize = Int(try header.int(3))
            let start = thrift.position
            guard start + compressedSize <= bytes.count else { throw ParquetError.unsupported("a page past the end of the file") }
            let stored = Array(bytes[start..<(start + compressedSize)])
            let body = codec == 6 ? try Zstd.decompress(stored, size: uncompressedSize) : stored
            position = start + compressedSize
            var page = PageCursor(body)
            switch try header.int(1) {
            case 2:  // DICTIONARY_PAGE
                let count = Int(try header.structure(7).int(1))
                var values = ParquetColumn(name: column.name, type: column.type, nullable: false)
                try page.plain(count, into: &values)
                dictionary = values
            case 0:  // DATA_PAGE
                let data = try header.structure(5)
                let count = Int(try data.int(1))
                var present = [UInt32](repeating: 1, count: count)
                if column.nullable {
                    let length = Int(try page.littleEndian(4))
                    var levels = PageCursor(Array(try page.take(length)))
                    present = try levels.hybrid(count, bitWidth: 1)
                }
                let valueCount = present.reduce(0) { $0 + Int($1) }
                var values = ParquetColumn(name: column.name, type: column.type, nullable: false)
                switch try data.int(2) {
                case 0:
                    try page.plain(valueCount, into: &values)
                case 2, 8:
                    guard let dictionary else { throw ParquetError.unsupported("dictionary indices without a dictionary") }
                    let width = Int(try page.take(1).first!)
                    for index in try page.hybrid(valueCount, bitWidth: width) {
                        guard Int(index) < dictionary.valueCount else {
                            throw ParquetError.unsupported("a dictionary index out of range")
                        }
                        values.append(from: dictionary, Int(index))
                    }
                case let other: throw ParquetError.unsupported("encoding \(other)")
                }
                var next = 0
                for flag in present {
                    if flag == 0 {
                        try column.appendNull()
                    } else {
                        column.append(from: values, next)
                        next += 1
                    }
                }
                remaining -= count
            case let other: throw ParquetError.unsupported("page type \(other)")
            }
        }
    }
}

/// Reads a page body.
private struct PageCursor {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, position + count <= bytes.count else {
            throw ParquetError.unsupported("a page shorter than its values")
        }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    mutating func littleEndian(_ count: Int) throws -> UInt64 {
        try take(count).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func uleb128() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try take(1).first!
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
            guard shift < 64 else { throw ParquetError.unsupported("an over-long varint") }
        }
    }

    /// `count` values of the RLE / bit-packing hybrid.
    mutating func hybrid(_ count: Int, bitWidth: Int) throws -> [UInt32] {
        guard (0...32).contains(bitWidth) else { throw ParquetError.unsupported("bit width \(bitWidth)") }
        var values: [UInt32] = []
        values.reserveCapacity(count)
        while values.count < count {
            let header = try uleb128()
            if header & 1 == 0 {
                let value = UInt32(try littleEndian((bitWidth + 7) / 8))
                values.append(contentsOf: repeatElement(value, count: min(Int(header >> 1), count - values.count)))
            } else {
                let packed = try take(Int(header >> 1) * bitWidth)  // groups of 8 values: bitWidth bytes each
                var accumulator: UInt64 = 0
                var bits = 0
                for byte in packed {
                    accumulator |= UInt64(byte) << UInt64(bits)
                    bits += 8
                    while bits >= bitWidth, bitWidth > 0 {
                        if values.count < count { values.append(UInt32(truncatingIfNeeded: accumulator & (1 << bitWidth - 1))) }
                        accumulator >>= UInt64(bitWidth)
                        bits -= bitWidth
                    }
                }
                if bitWidth == 0 {
                    values.append(contentsOf: repeatElement(0, count: min(Int(header >> 1) * 8, count - values.count)))
                }
            }
        }
        return values
    }

    /// `count` PLAIN values of `column`'s type, appended to it.
    mutating func plain(_ count: Int, into column: inout ParquetColumn) throws {
        switch column.type {
        case .boolean:
            let packed = try take((count + 7) / 8)
            for index in 0..<count { column.append(Int64(packed[packed.startIndex + index / 8] >> UInt8(index % 8) & 1)) }
        case .int32, .date:
            for _ in 0..<count { column.append(Int64(Int32(bitPattern: UInt32(try littleEndian(4))))) }
        case .int64, .double:
            for _ in 0..<count { column.append(Int64(bitPattern: try littleEndian(8))) }
        case .decimal:
            for _ in 0..<count {
                let bits = try take(16).reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
                column.append(decimal: Int128(bitPattern: bits))
            }
        case .string:
            for _ in 0..<count { column.append(string: try take(Int(try littleEndian(4)))) }
        }
    }
}

extension ParquetColumn {
    /// Appends value `index` of `other` (a column of the same type).
    mutating func append(from other: ParquetColumn, _ index: Int) {
        switch type {
        case .string: append(string: other.string(index))
        case .decimal: append(decimal: other.decimals[index])
        default: append(other.integers[index])
        }
    }

    /// Row `row`'s value: nil when null.
    package func value(_ row: Int) -> ParquetValue? {
        guard isPresent(row) else { return nil }
        let index = nullable ? valueIndex(of: row) : row
        switch type {
        case .string: return .string(string(index))
        case .decimal: return .decimal(decimals[index])
        default: return .integer(integers[index])
        }
    }

    /// Every row's value, in order (cheaper than `value(_:)` row by row for a nullable column).
    package var values: [ParquetValue?] {
        var out: [ParquetValue?] = []
        out.reserveCapacity(rows)
        var next = 0
        for row in 0..<rows {
            guard isPresent(row) else {
                out.append(nil)
                continue
            }
            switch type {
            case .string: out.append(.string(string(next)))
            case .decimal: out.append(.decimal(decimals[next]))
            default: out.append(.integer(integers[next]))
            }
            next += 1
        }
        return out
    }

    private func valueIndex(of row: Int) -> Int { present[..<row].reduce(0) { $0 + ($1 ? 1 : 0) } }
}

/// One value of a column: INT32, INT64, DATE (days since 1970-01-01) and BOOLEAN (0, 1) are integers.
package enum ParquetValue: Equatable, Sendable {
    case integer(Int64)
    case decimal(Int128)
    case string(ArraySlice<UInt8>)
}
