/// The CSV the aggregates are published in (RFC 4180, LF line ends), read back by tests: one parser
/// for every test target.
package enum CSVText {
    /// The records, header first. An unquoted empty field is nil (SQL NULL in the output contract);
    /// a quoted empty one is "".
    package static func records(_ text: String) -> [[String?]] {
        var records: [[String?]] = []
        var record: [String?] = []
        var field = ""
        var quoted = false
        var inQuotes = false
        var scalars = Array(text.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            if inQuotes {
                if scalar == "\"" {
                    if scalars.first == "\"" {
                        field.unicodeScalars.append("\"")
                        scalars.removeFirst()
                    } else {
                        inQuotes = false
                    }
                } else {
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"":
                quoted = true
                inQuotes = true
            case ",", "\n":
                record.append(field.isEmpty && !quoted ? nil : field)
                field = ""
                quoted = false
                if scalar == "\n" {
                    records.append(record)
                    record = []
                }
            default: field.unicodeScalars.append(scalar)
            }
        }
        return records
    }

    /// The rows after the header, by column name; NULL stays nil.
    package static func rowsKeepingNulls(_ text: String) -> [[String: String?]] {
        let records = records(text)
        guard let header = records.first else { return [] }
        return records.dropFirst().map { values in
            var row: [String: String?] = [:]
            for (name, value) in zip(header, values) { row[name ?? ""] = value }
            return row
        }
    }

    /// The rows after the header, by column name; NULL reads as "".
    package static func rows(_ text: String) -> [[String: String]] {
        rowsKeepingNulls(text).map { $0.mapValues { $0 ?? "" } }
    }
}
