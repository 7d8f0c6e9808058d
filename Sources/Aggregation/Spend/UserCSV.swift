import Basics

/// A CSV file a person or another system made (a spend export, a rate table): RFC 4180 with the
/// liberties such files take — a UTF-8 byte order mark, CRLF or LF line ends, blank lines — read
/// whole into records that remember their line, so every error can name `FILE:LINE:COLUMN`. A quoted
/// `'` before `=`, `+`, `-`, `@`, a tab or CR (`SpreadsheetCell`) is taken off.
/// (`RenderedCSV` reads the job's own files, which have none of these.)
package struct UserCSV: Sendable {
    package struct Record: Sendable {
        /// The 1-based line the record starts on.
        package var line: Int
        package var fields: [String]
    }

    package let records: [Record]

    package init(_ bytes: [UInt8]) throws(AggregationError) {
        var records: [Record] = []
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var line = 1
        var fields: [String] = []
        var field: [UInt8] = []
        var recordLine = 1
        var inQuotes = false
        var wasQuoted = false
        func endField() throws(AggregationError) {
            // A neutralised cell (`SpreadsheetCell`, as the stored spend files and spreadsheets write one): without its `'`.
            if wasQuoted, SpreadsheetCell.isNeutralised(field) { field.removeFirst() }
            guard let text = String(validating: field, as: UTF8.self) else {
                throw .malformedCSV(line: line, problem: "not UTF-8 text")
            }
            fields.append(text)
            field.removeAll(keepingCapacity: true)
            wasQuoted = false
        }
        func endRecord() throws(AggregationError) {
            try endField()
            // A blank line is no record.
            if !(fields.count == 1 && fields[0].isEmpty) { records.append(Record(line: recordLine, fields: fields)) }
            fields = []
        }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if inQuotes {
                if byte == UInt8(ascii: "\"") {
                    if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                        field.append(byte)
                        index += 1
                    } else {
                        inQuotes = false
                    }
                } else {
                    if byte == 0x0A { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: ","):
                try endField()
            case 0x0D where index < bytes.count && bytes[index] == 0x0A:
                continue
            case 0x0A:
                try endRecord()
                line += 1
                recordLine = line
            case UInt8(ascii: "\""):
                guard field.isEmpty, !wasQuoted else {
                    throw .malformedCSV(
                        line: line, problem: "a quote inside an unquoted field (quote the whole field, doubling inner quotes)")
                }
                inQuotes = true
                wasQuoted = true
            default:
                if wasQuoted { throw .malformedCSV(line: line, problem: "text after a closing quote") }
                field.append(byte)
            }
        }
        if inQuotes { throw .malformedCSV(line: recordLine, problem: "a quoted field is never closed") }
        if !field.isEmpty || !fields.isEmpty || wasQuoted { try endRecord() }
        self.records = records
    }
}
