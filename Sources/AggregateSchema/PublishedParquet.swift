package import Basics
package import Parquet

/// A published table's Parquet file read back as its CSV file would have it: what `postback report`,
/// the cohort pass and the model read when a day was published as Parquet only.
package enum PublishedParquet {
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
