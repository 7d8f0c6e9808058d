import AggregateSchema
import Aggregation
import Basics
import Parquet
import PostbackServer
import Reporting

/// `GET /v1/tables/{table}/rows`: a table's rows of a day range, only those the scope admits, then
/// the query's filters, in day and file order, a page of at most `limit` rows at a time, as JSON,
/// CSV (the product's CSV writer: cells a spreadsheet would evaluate are neutralised) or Parquet.
/// A page that stops before the end gives the cursor of the next one (JSON `next_cursor`, and the
/// `Next-Cursor` header in every format).
enum RowsEndpoint {
    struct Page {
        var columns: [(name: String, sqlType: String, parquet: ParquetType, nullable: Bool)]
        var rows: [[String?]] = []
        var next: APIQuery.Cursor?
        var daysMissing: [UTCDay] = []
        var daysLeftOut: [UTCDay] = []
    }

    static func answer(
        table: APITables.Table, query: APIQuery, scope: DataScope, dataDirectory: String, cache: PublishedDayCache? = nil
    ) throws(APIProblem) -> (reply: HTTPReply, rows: Int) {
        let page = try read(table: table, query: query, scope: scope, dataDirectory: dataDirectory, cache: cache)
        var headers: [(name: String, value: String)] = []
        if let next = page.next { headers.append(("Next-Cursor", next.text)) }
        let reply: HTTPReply
        switch query.format {
        case .json:
            reply = HTTPReply(
                status: 200, contentType: "application/json", body: json(page, table: table.name, query: query),
                headers: headers)
        case .csv:
            reply = HTTPReply(status: 200, contentType: "text/csv; charset=utf-8", body: csv(page), headers: headers)
        case .parquet:
            reply = HTTPReply(
                status: 200, contentType: "application/vnd.apache.parquet", body: try parquet(page), headers: headers)
        }
        return (reply, page.rows.count)
    }

    /// The page's rows: the scope is applied by `PublishedRows` as each row is read.
    static func read(
        table: APITables.Table, query: APIQuery, scope: DataScope, dataDirectory: String, cache: PublishedDayCache? = nil
    ) throws(APIProblem) -> Page {
        var names = query.columns ?? [APITables.dayColumn] + table.columns.map(\.name)
        if let maturity = table.maturityColumn, !names.contains(maturity) { names.append(maturity) }
        var page = Page(columns: [])
        for name in names {
            if name == APITables.dayColumn {
                page.columns.append((name, "DATE", .date, false))
            } else if let column = table.column(named: name) {
                page.columns.append((name, column.sqlType, column.type.parquet, column.isNullable))
            } else {
                throw .badQuery("\(table.name) has no column '\(APIProblem.quoted(name))' (GET /v1/tables lists them)")
            }
        }
        let reader = PublishedRows(
            dataDirectory: dataDirectory, table: table.name, scope: scope, filters: query.filters, cache: cache)
        let first = query.cursor?.day ?? query.from
        var skip = query.cursor?.offset ?? 0
        var rows: [[String?]] = []
        rows.reserveCapacity(min(query.limit, 1024))
        for offset in 0...(query.to.daysSinceEpoch - first.daysSinceEpoch) {
            let day = first.adding(days: offset)
            var index = 0
            var places: [Int?]? = nil
            let outcome: PublishedRows.DayOutcome
            do {
                outcome = try reader.forEachRow(day: day) { header, fields in
                    defer { index += 1 }
                    if index < skip { return true }
                    if rows.count == query.limit {
                        page.next = APIQuery.Cursor(day: day, offset: index)
                        return false
                    }
                    if places == nil {
                        places = names.map { $0 == APITables.dayColumn ? nil : header.firstIndex(of: $0) }
                    }
                    rows.append(
                        zip(names, places!).map { name, place in
                            name == APITables.dayColumn ? day.description : place.flatMap { fields[$0] }
                        })
                    return true
                }
            } catch {
                throw .failed("\(table.name) of \(day): \(error)")
            }
            skip = 0
            switch outcome {
            case .read: break
            case .missing: page.daysMissing.append(day)
            case .leftOut: page.daysLeftOut.append(day)
            }
            if page.next != nil { break }
        }
        page.rows = rows
        return page
    }

    static func json(_ page: Page, table: String, query: APIQuery) -> [UInt8] {
        let kinds = page.columns.map { APITables.jsonKind($0.sqlType) }
        var json = JSONWriter(reservingCapacity: 256 + page.rows.count * 64 * max(1, page.columns.count))
        json.beginObject()
        json.field("table", table)
        json.field("from", query.from.description)
        json.field("to", query.to.description)
        json.key("columns")
        json.beginArray()
        for column in page.columns {
            json.beginObject()
            json.field("name", column.name)
            json.field("type", column.sqlType)
            json.endObject()
        }
        json.endArray()
        json.key("rows")
        json.beginArray()
        for row in page.rows {
            json.beginObject()
            for (index, value) in row.enumerated() {
                json.key(page.columns[index].name)
                write(value, kind: kinds[index], into: &json)
            }
            json.endObject()
        }
        json.endArray()
        json.field("row_count", page.rows.count)
        json.field("next_cursor", page.next?.text)
        days("days_missing", page.daysMissing, into: &json)
        days("days_left_out", page.daysLeftOut, into: &json)
        json.endObject()
        return json.bytes + [0x0A]
    }

    static func days(_ key: String, _ days: [UTCDay], into json: inout JSONWriter) {
        json.key(key)
        json.beginArray()
        for day in days { json.value(day.description) }
        json.endArray()
    }

    /// A published value as its column's JSON type; text that is not one (never written by the job)
    /// stays a string.
    private static func write(_ value: String?, kind: APITables.JSONKind, into json: inout JSONWriter) {
        guard let value else { return json.value(nil as String?) }
        switch kind {
        case .integer where Int64(value) != nil: json.value(numberText: value)
        case .number where isDecimal(value): json.value(numberText: value)
        case .boolean where value == "true" || value == "false": json.value(value == "true")
        default: json.value(value)
        }
    }

    /// `-?digits(.digits)?(e±digits)?`: a JSON number as the tables write amounts and doubles.
    private static func isDecimal(_ text: String) -> Bool {
        guard let number = Double(text), number.isFinite else { return false }
        return text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e")
                || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+")
        } && text.first != "+" && text.first != "."
    }

    static func csv(_ page: Page) -> [UInt8] {
        var bytes = CSVLine.header(page.columns.map(\.name))
        var line = CSVLine()
        for row in page.rows {
            line.reset()
            for value in row { line.field(value) }
            line.endLine()
            bytes.append(contentsOf: line.bytes)
        }
        return bytes
    }

    static func parquet(_ page: Page) throws(APIProblem) -> [UInt8] {
        var columns = page.columns.map { ParquetColumn(name: $0.name, type: $0.parquet, nullable: $0.nullable) }
        for row in page.rows {
            for (index, value) in row.enumerated() {
                let problem: ParquetError?
                if let value {
                    var text = value
                    problem = text.withUTF8 { columns[index].append(text: $0) }
                } else {
                    problem = columns[index].append(text: nil)
                }
                if let problem { throw .failed("\(page.columns[index].name): \(problem)") }
            }
        }
        do {
            return try ParquetWriter.write(columns)
        } catch {
            throw .failed("Parquet: \(error)")
        }
    }
}
