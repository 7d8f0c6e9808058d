/// The one rule for CSV cells a spreadsheet would evaluate (OWASP, "CSV injection"): every CSV the
/// product writes neutralises a text cell whose first character, after any number of `'`, is `=`,
/// `+`, `-`, `@`, a tab or a carriage return, by writing it quoted with one `'` before it
/// (`=HYPERLINK(…)` is written `"'=HYPERLINK(…)"`). A cell that is a plain decimal number (`-1.50`,
/// `-3`) is never changed: a spreadsheet reads it as the number it is. Numbers written as numbers
/// (counts, amounts) never go through the rule at all.
///
/// The product's own readers of its CSV (Parquet conversion, the report, the cohort pass, the spend
/// store) take that one `'` off again (`isNeutralised`), so a table's values, and its Parquet file,
/// are the same as without the rule. The `'` before `'`s makes this exact: a text that itself starts
/// with `'` and then one of those characters gets one more `'`, so only a written `'` is ever taken off.
/// docs/aggregate.md, "Cells a spreadsheet would evaluate"; spark/postback_aggregate.py does the same.
package enum SpreadsheetCell {
    /// Whether a cell starting with `byte` may need the rule: one comparison for almost every cell
    /// (letters, digits and most else are out).
    @inline(__always)
    package static func mayNeedNeutralising(first byte: UInt8) -> Bool {
        byte == 0x3D || byte == 0x2B || byte == 0x2D || byte == 0x40 || byte == 0x09 || byte == 0x0D || byte == 0x27
    }

    /// Whether a text cell is written neutralised.
    package static func needsNeutralising(_ text: some Collection<UInt8>) -> Bool {
        var quotes = 0
        var index = text.startIndex
        while index < text.endIndex, text[index] == 0x27 {
            quotes += 1
            index = text.index(after: index)
        }
        guard index < text.endIndex, isTrigger(text[index]) else { return false }
        return quotes > 0 || !isPlainDecimal(text)
    }

    /// Whether a quoted field's text (its doubled quotes made single) is a neutralised cell, whose
    /// first byte, a `'`, the reader drops.
    package static func isNeutralised(_ quotedText: some Collection<UInt8>) -> Bool {
        quotedText.first == 0x27 && needsNeutralising(quotedText)
    }

    private static func isTrigger(_ byte: UInt8) -> Bool {
        byte == 0x3D || byte == 0x2B || byte == 0x2D || byte == 0x40 || byte == 0x09 || byte == 0x0D
    }

    /// `-?[0-9]+(\.[0-9]+)?`: how the product writes a number.
    private static func isPlainDecimal(_ text: some Collection<UInt8>) -> Bool {
        var index = text.startIndex
        if index < text.endIndex, text[index] == 0x2D { index = text.index(after: index) }
        var digits = 0
        var fraction = -1
        while index < text.endIndex {
            let byte = text[index]
            if byte == 0x2E {
                guard fraction < 0, digits > 0 else { return false }
                fraction = 0
            } else if byte >= 0x30 && byte <= 0x39 {
                if fraction >= 0 { fraction += 1 } else { digits += 1 }
            } else {
                return false
            }
            index = text.index(after: index)
        }
        return digits > 0 && fraction != 0
    }
}
