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
    package mutating func appendNull() throws {
        if let refusal = appendNullIfNullable() { throw refusal }
    }

    /// Appends a null, or returns why the column takes none (it is not nullable).
    @inlinable
    mutating func appendNullIfNullable() -> ParquetError? {
        guard nullable else { return .nullInRequiredColumn(name, row: rows) }
        present.append(false)
        rows += 1
        return nil
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

/// Why a column, a file or a value cannot be written or read: a closed `code` to branch on, and the
/// context a caller names (the column, the row, what was read).
package struct ParquetError: Error, Equatable, CustomStringConvertible, Sendable {
    package enum Code: Sendable, Hashable {
        /// A null in a column that is not nullable (`column`, `row`).
        case nullInRequiredColumn
        /// A column with another number of rows than the first (`column`, `row`: its rows, `expected`).
        case rowCountsDiffer
        /// A page or the footer past Parquet's 2 GiB limit (`detail`: which).
        case tooLarge
        /// A value its column's type cannot hold, as the caller read it (`detail`: the text).
        case invalidValue
        /// A file `ParquetReader` cannot read: damaged, or written with features it does not know (`detail`).
        case unsupported
    }

    package let code: Code
    /// The column's name, where one column is to blame.
    package let column: String?
    /// The 0-based row, where one row is to blame (`rowCountsDiffer`: the column's row count).
    package let row: Int?
    /// `rowCountsDiffer`: the first column's row count.
    package let expected: Int?
    /// The rest of the context: what is too large, the value's text, what cannot be read.
    package let detail: String

    private init(_ code: Code, column: String? = nil, row: Int? = nil, expected: Int? = nil, detail: String = "") {
        self.code = code
        self.column = column
        self.row = row
        self.expected = expected
        self.detail = detail
    }

    package static func nullInRequiredColumn(_ name: String, row: Int) -> ParquetError {
        ParquetError(.nullInRequiredColumn, column: name, row: row)
    }

    package static func rowCountsDiffer(_ name: String, rows: Int, expected: Int) -> ParquetError {
        ParquetError(.rowCountsDiffer, column: name, row: rows, expected: expected)
    }

    package static func tooLarge(_ what: String) -> ParquetError { ParquetError(.tooLarge, detail: what) }

    package static func invalidValue(_ text: String) -> ParquetError { ParquetError(.invalidValue, detail: text) }

    package static func unsupported(_ what: String) -> ParquetError { ParquetError(.unsupported, detail: what) }

    package var description: String {
        switch code {
        case .nullInRequiredColumn: return "Parquet: column \(column ?? "") is not nullable, but row \(row ?? 0) is empty"
        case .rowCountsDiffer: return "Parquet: column \(column ?? "") has \(row ?? 0) rows, the first column \(expected ?? 0)"
        case .tooLarge: return "Parquet: \(detail) is over 2 GiB"
        case .invalidValue: return "not a value of the column's type: \(detail)"
        case .unsupported: return "Parquet: cannot read \(detail)"
        }
    }
}
