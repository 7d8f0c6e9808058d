package import Parquet

/// A published column's type: the one declaration from which the SQL text readers are told
/// (docs/aggregate.md, "Column types"), the Parquet type the files carry and the Spark type the
/// Spark job casts to are derived, each by an exhaustive switch (a new type does not compile until
/// every engine has its name for it).
package enum ColumnType: Hashable, Sendable {
    /// UTF-8 text.
    case string
    case int32
    case int64
    case bool
    /// A calendar day, `YYYY-MM-DD` in the CSV.
    case date
    /// An exact decimal with `scale` digits after the point.
    case decimal(precision: Int, scale: Int)
    /// IEEE 754 binary64 (the model's variance parts, which are not amounts).
    case double

    /// Amounts: millionths of a currency unit (`Money`), never floating point.
    package static let amount = ColumnType.decimal(precision: 38, scale: Money.scaleDigits)

    /// The SQL type a reader should give the column (`CREATE TABLE`, the `column_types` of
    /// spark/record-schema.json).
    package var sql: String {
        switch self {
        case .string: return "VARCHAR"
        case .int32: return "INTEGER"
        case .int64: return "BIGINT"
        case .bool: return "BOOLEAN"
        case .date: return "DATE"
        case .decimal(let precision, let scale): return "DECIMAL(\(precision), \(scale))"
        case .double: return "DOUBLE"
        }
    }

    /// Spark SQL's name for the type (`Column.cast`).
    package var spark: String {
        switch self {
        case .string: return "string"
        case .int32: return "int"
        case .int64: return "bigint"
        case .bool: return "boolean"
        case .date: return "date"
        case .decimal(let precision, let scale): return "decimal(\(precision),\(scale))"
        case .double: return "double"
        }
    }

    /// The Parquet physical and logical type of the column's values.
    package var parquet: ParquetType {
        switch self {
        case .string: return .string
        case .int32: return .int32
        case .int64: return .int64
        case .bool: return .boolean
        case .date: return .date
        case .decimal(let precision, let scale): return .decimal(precision: precision, scale: scale)
        case .double: return .double
        }
    }
}
