#if canImport(Glibc)
    import Glibc
#endif

/// A column's type as a reader sees it: the physical type and the logical annotation the writer
/// gives it.
package enum ParquetType: Sendable, Equatable {
    /// BYTE_ARRAY annotated STRING (UTF-8).
    case string
    /// INT32, no annotation.
    case int32
    /// INT64, no annotation.
    case int64
    /// BOOLEAN.
    case boolean
    /// INT32 annotated DATE: days since 1970-01-01.
    case date
    /// FIXED_LEN_BYTE_ARRAY(16) annotated DECIMAL(precision, scale): the unscaled value as a 128-bit
    /// two's-complement big-endian integer.
    case decimal(precision: Int, scale: Int)
    /// DOUBLE (IEEE 754 binary64), no annotation; held as its bit pattern.
    case double
}

/// One column of a Parquet file: its name, type and nullability, and every row's value. Values are
/// appended row by row (`appendNull` for an empty one); the writer splits them into row groups.
package struct ParquetColumn: Sendable {
    package let name: String
    package let type: ParquetType
    /// OPTIONAL (may hold nulls; a definition level per row) or REQUIRED.
    package let nullable: Bool

    /// Per row: whether it holds a value (only kept for nullable columns).
    @usableFromInline var present: [Bool] = []
    @usableFromInline package internal(set) var rows = 0
    /// INT32, INT64, DATE and BOOLEAN (0 or 1) values, and DOUBLE bit patterns, one per non-null row.
    @usableFromInline var integers: [Int64] = []
    /// DECIMAL values (unscaled), one per non-null row.
    @usableFromInline var decimals: [Int128] = []
    /// STRING values: their bytes end to end, and where each starts (plus the end).
    @usableFromInline var stringBytes: [UInt8] = []
    @usableFromInline var stringStarts: [Int] = [0]

    package init(name: String, type: ParquetType, nullable: Bool) {
        self.name = name
        self.type = type
        self.nullable = nullable
    }

    package var valueCount: Int {
        switch type {
        case .string: return stringStarts.count - 1
        case .decimal: return decimals.count
        default: return integers.count
        }
    }

    /// Room for `rows` more rows without growing (strings' bytes still grow as they come).
    package mutating func reserveCapacity(_ rows: Int) {
        if nullable { present.reserveCapacity(present.count + rows) }
        switch type {
        case .string: stringStarts.reserveCapacity(stringStarts.count + rows)
        case .decimal: decimals.reserveCapacity(decimals.count + rows)
        default: integers.reserveCapacity(integers.count + rows)
        }
    }

    @inlinable
    package mutating func appendNull() throws(ParquetError) {
        guard nullable else { throw .nullInRequiredColumn(name, row: rows) }
        present.append(false)
        rows += 1
    }

    /// An INT32, INT64 or DATE value (days since 1970-01-01), or a BOOLEAN as 0 or 1.
    package mutating func append(_ value: Int64) {
        switch type {
        case .int32, .date: precondition(Int64(Int32(truncatingIfNeeded: value)) == value, "\(name): \(value) is not an INT32")
        case .boolean: precondition(value == 0 || value == 1)
        case .int64, .double: break
        default: preconditionFailure("\(name): not an integer column")
        }
        integers.append(value)
        presentRow()
    }

    package mutating func append(decimal unscaled: Int128) {
        guard case .decimal = type else { preconditionFailure("\(name): not a decimal column") }
        decimals.append(unscaled)
        presentRow()
    }

    /// A STRING value (concrete, not generic: a generic call from another module would not be
    /// specialized, and would append byte by byte through witness tables).
    package mutating func append(string bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBufferPointer { append(string: $0) }
    }

    package mutating func append(string bytes: UnsafeBufferPointer<UInt8>) {
        guard case .string = type else { preconditionFailure("\(name): not a string column") }
        stringBytes.append(contentsOf: bytes)
        stringStarts.append(stringBytes.count)
        presentRow()
    }

    @usableFromInline
    mutating func presentRow() {
        if nullable { present.append(true) }
        rows += 1
    }

    /// The bytes of string value `index`.
    func string(_ index: Int) -> ArraySlice<UInt8> { stringBytes[stringStarts[index]..<stringStarts[index + 1]] }

    /// Whether string value `a` sorts before value `b` as unsigned bytes (Parquet's order for STRING).
    func stringPrecedes(_ a: Int, _ b: Int) -> Bool {
        let (startA, lengthA) = (stringStarts[a], stringStarts[a + 1] - stringStarts[a])
        let (startB, lengthB) = (stringStarts[b], stringStarts[b + 1] - stringStarts[b])
        let common = min(lengthA, lengthB)
        let order =
            common == 0
            ? 0 : stringBytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + startA, $0.baseAddress! + startB, common) }
        return order < 0 || (order == 0 && lengthA < lengthB)
    }

    /// Whether `row` holds a value.
    func isPresent(_ row: Int) -> Bool { nullable ? present[row] : true }
}

package enum ParquetError: Error, Equatable, CustomStringConvertible {
    case nullInRequiredColumn(String, row: Int)
    case rowCountsDiffer(String, rows: Int, expected: Int)
    case tooLarge(String)
    /// A value its column's type cannot hold (as the caller read it).
    case invalidValue(String)
    /// A file `ParquetReader` cannot read (damaged, or written with features it does not know).
    case unsupported(String)

    package var description: String {
        switch self {
        case .nullInRequiredColumn(let name, let row): return "Parquet: column \(name) is not nullable, but row \(row) is empty"
        case .rowCountsDiffer(let name, let rows, let expected):
            return "Parquet: column \(name) has \(rows) rows, the first column \(expected)"
        case .tooLarge(let what): return "Parquet: \(what) is over 2 GiB"
        case .invalidValue(let text): return "not a value of the column's type: \(text)"
        case .unsupported(let what): return "Parquet: cannot read \(what)"
        }
    }
}
