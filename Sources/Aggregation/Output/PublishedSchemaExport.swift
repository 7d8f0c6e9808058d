import AggregateSchema
import Basics
import Postbacks

/// The published data's contract (`AggregateSchema`) for the engines that are not Swift: every table
/// with its columns, each column's types and role, and the record vocabulary a reader checks (flag
/// fields and actions, quarantine reasons, verification statuses). Written as spark/published-schema.json
/// and, from the same export, as the Python module spark/published_schema.py that the Spark job, the
/// independent checks (scripts/) and the benches import; `PublishedSchemaTests` fails when either
/// checked-in file differs from these declarations and rewrites both with `POSTBACK_UPDATE_PUBLISHED_SCHEMA=1`.
package enum PublishedSchemaExport {
    package static let jsonPath = "spark/published-schema.json"
    package static let pythonPath = "spark/published_schema.py"
    static let generatedFrom =
        "Sources/AggregateSchema (and the record vocabulary of Sources/Postbacks); do not edit: "
        + "POSTBACK_UPDATE_PUBLISHED_SCHEMA=1 swift test --filter PublishedSchemaTests rewrites it"

    /// A table as published: its name, its columns in file order, and the table it is made from (a
    /// cohort table's day table; nil for the day tables).
    struct Table {
        var name: String
        var columns: [AggregateColumn]
        var source: String?
    }

    static var tables: [Table] {
        AggregateTables.columnsByTable.map { Table(name: $0.table, columns: $0.columns, source: nil) }
            + AggregateTables.cohortTables.map {
                Table(name: $0.table, columns: AggregateTables.cohortColumns, source: $0.source)
            }
    }

    /// The named lists of values, in the order both files give them.
    static var vocabularies: [(name: String, values: [String])] {
        [
            ("day_tables", AggregateTables.all),
            ("cohort_tables", AggregateTables.cohortTables.map(\.table)),
            ("modeled_tables", [AggregateTables.campaignDaily, AggregateTables.campaignDailyDevelopment]),
            ("modeled_columns", AggregateTables.modeledColumns.map(\.name)),
            // The cohort tables' own columns; `modeled_columns` follow them.
            ("cohort_columns", CohortColumn.allCases.map(\.rawValue)),
            ("cohort_statuses", CohortStatus.allCases.map(\.rawValue)),
            ("roas_notes", ROASNote.allCases.map(\.rawValue)),
            ("flag_fields", PostbackFlag.Field.allCases.map(\.rawValue)),
            ("flag_actions", PostbackFlag.Action.allCases.map(\.rawValue)),
            ("quarantine_reasons", QuarantineReason.allCases.map(\.rawValue)),
            ("verification_statuses", VerificationStatus.allCases.map(\.rawValue)),
        ]
    }

    /// The roles' names (`ColumnRole`), as both files give them.
    static func roleName(_ role: ColumnRole) -> String {
        switch role {
        case .dimension: return "dimension"
        case .attribute: return "attribute"
        case .postbackCount: return "postback_count"
        case .amount: return "amount"
        case .eventCount: return "event_count"
        case .cohortValue: return "cohort_value"
        case .modeled: return "modeled"
        }
    }

    /// spark/published-schema.json: one member per line, one table's column per line.
    package static func json() -> [UInt8] {
        func quoted(_ text: String) -> String {
            var bytes: [UInt8] = []
            JSONWriter.appendQuoted(text, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        var lines = ["{", "  \"generated_from\": \(quoted(generatedFrom)),", "  \"tables\": {"]
        for (index, table) in tables.enumerated() {
            lines.append("    \(quoted(table.name)): {")
            lines.append("      \"source\": \(table.source.map(quoted) ?? "null"),")
            lines.append("      \"columns\": [")
            for (position, column) in table.columns.enumerated() {
                var json = JSONWriter()
                json.beginObject()
                json.field("name", column.name)
                json.field("sql", column.type.sql)
                json.field("spark", column.type.spark)
                json.field("nullable", column.isNullable)
                json.field("role", roleName(column.role))
                json.endObject()
                lines.append(
                    "        " + String(decoding: json.bytes, as: UTF8.self) + (position + 1 < table.columns.count ? "," : ""))
            }
            lines.append("      ]")
            lines.append("    }" + (index + 1 < tables.count ? "," : ""))
        }
        lines.append("  },")
        for (index, vocabulary) in vocabularies.enumerated() {
            lines.append(
                "  \(quoted(vocabulary.name)): [" + vocabulary.values.map(quoted).joined(separator: ", ") + "]"
                    + (index + 1 < vocabularies.count ? "," : ""))
        }
        lines.append("}")
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// spark/published_schema.py: the same export as Python constants.
    package static func python() -> [UInt8] {
        func quoted(_ text: String) -> String {
            // Python accepts JSON's string escapes for the text these names hold.
            var bytes: [UInt8] = []
            JSONWriter.appendQuoted(text, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        func constant(_ name: String) -> String {
            var result = ""
            for character in name { result += character.isLetter || character.isNumber ? character.uppercased() : "_" }
            return result
        }
        var lines = [
            "\"\"\"The published data's contract, generated from \(generatedFrom).",
            "",
            "Table names, each table's columns with their SQL and Spark types, and the record vocabulary; the",
            "same declarations as published-schema.json beside it.\"\"\"",
            "",
            "# Every table's name.",
        ]
        for table in tables { lines.append("\(constant(table.name)) = \(quoted(table.name))") }
        lines.append("")
        for vocabulary in vocabularies {
            lines.append("\(constant(vocabulary.name)) = [" + vocabulary.values.map(quoted).joined(separator: ", ") + "]")
        }
        // Each column declared once per family (the day tables, the cohort tables), then each table's names.
        let families: [(constant: String, comment: String, tables: [Table])] = [
            ("DAY_COLUMN_TYPES", "the day tables", tables.filter { $0.source == nil }),
            ("COHORT_COLUMN_TYPES", "the cohort tables", tables.filter { $0.source != nil }),
        ]
        for family in families {
            lines.append("")
            lines.append("# Every column of \(family.comment): (SQL type, Spark type, nullable, role), by name.")
            lines.append("\(family.constant) = {")
            var declared: [String: String] = [:]
            for column in family.tables.flatMap(\.columns) {
                let declaration =
                    "(\(quoted(column.type.sql)), \(quoted(column.type.spark)), \(column.isNullable ? "True" : "False"), "
                    + "\(quoted(roleName(column.role))))"
                if let earlier = declared[column.name] {
                    precondition(earlier == declaration, "\(column.name) is declared two ways in \(family.comment)")
                    continue
                }
                declared[column.name] = declaration
                lines.append("    \(quoted(column.name)): \(declaration),")
            }
            lines.append("}")
        }
        lines.append("")
        lines.append("# Each table's column names, in file order.")
        lines.append("TABLE_COLUMNS = {")
        var sameAs: [(table: String, earlier: String)] = []
        for (index, table) in tables.enumerated() {
            if let earlier = tables.prefix(index).first(where: { $0.columns == table.columns }) {
                sameAs.append((table.name, earlier.name))
                continue
            }
            lines.append("    \(constant(table.name)): [")
            var line = "       "
            for name in table.columns.map(\.name) {
                let item = " " + quoted(name) + ","
                if line.count + item.count > 110 {
                    lines.append(line)
                    line = "       "
                }
                line += item
            }
            lines.append(line)
            lines.append("    ],")
        }
        lines.append("}")
        for (table, earlier) in sameAs {
            lines.append("TABLE_COLUMNS[\(constant(table))] = TABLE_COLUMNS[\(constant(earlier))]  # the same columns")
        }
        lines.append("# Each table's columns in file order: (name, SQL type, Spark type, nullable, role).")
        lines.append("COLUMNS = {")
        lines.append(
            "    table: [(name, *(DAY_COLUMN_TYPES if table in DAY_TABLES else COHORT_COLUMN_TYPES)[name]) for name in names]")
        lines.append("    for table, names in TABLE_COLUMNS.items()")
        lines.append("}")
        lines.append("")
        lines.append("# Each cohort table and the day table it is made from.")
        lines.append("COHORT_SOURCES = {")
        for table in tables { if let source = table.source { lines.append("    \(constant(table.name)): \(constant(source)),") } }
        lines.append("}")
        lines.append("")
        lines.append("")
        lines.append("def column_names(table):")
        lines.append("    \"\"\"The table's column names, in file order.\"\"\"")
        lines.append("    return [column[0] for column in COLUMNS[table]]")
        lines.append("")
        lines.append("")
        lines.append("def sql_types(table):")
        lines.append("    \"\"\"The table's declared SQL type by column name.\"\"\"")
        lines.append("    return {column[0]: column[1] for column in COLUMNS[table]}")
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }
}
