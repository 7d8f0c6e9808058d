/// Builds RFC 4180 CSV: fields separated by commas, quoted only when they hold a comma, a quote or
/// a line break (quotes doubled), `\n` line ends. A nil field is empty (SQL NULL for DuckDB, Spark and
/// BigQuery); an empty string is written `""` so the two stay apart.
struct CSVLine {
    private(set) var bytes: [UInt8] = []
    private var fields = 0

    init() { bytes.reserveCapacity(512) }

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        fields = 0
    }

    mutating func field(_ text: String?) {
        separate()
        guard var text else { return }
        if text.isEmpty {
            bytes.append(contentsOf: [0x22, 0x22])
            return
        }
        text.withUTF8 { utf8 in
            let needsQuotes = utf8.contains { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }
            guard needsQuotes else { bytes.append(contentsOf: utf8); return }
            bytes.append(0x22)
            for byte in utf8 {
                if byte == 0x22 { bytes.append(0x22) }
                bytes.append(byte)
            }
            bytes.append(0x22)
        }
    }

    mutating func field(_ number: Int64?) {
        separate()
        if let number { appendDecimal(number) }
    }

    mutating func field(_ number: Int?) { field(number.map(Int64.init)) }

    mutating func field(_ flag: Bool?) {
        separate()
        if let flag { bytes.append(contentsOf: flag ? Array("true".utf8) : Array("false".utf8)) }
    }

    /// An amount as its shortest exact decimal (`Money.description`), without building a String.
    mutating func field(_ money: Money?) {
        separate()
        guard let money else { return }
        let micros = money.micros
        let whole = micros / 1_000_000
        var fraction = (micros % 1_000_000).magnitude
        if micros < 0 && whole == 0 { bytes.append(0x2D) }
        appendDecimal(whole)
        guard fraction != 0 else { return }
        var width = 6
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        bytes.append(0x2E)
        var divisor: UInt64 = 1
        for _ in 1..<width { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(fraction / divisor % 10) + 0x30)
            divisor /= 10
        }
    }

    mutating func endLine() { bytes.append(0x0A) }

    /// Appends fields already encoded by another `CSVLine` (at least one field, no line end).
    mutating func appendRaw(_ encoded: [UInt8]) {
        separate()
        bytes.append(contentsOf: encoded)
    }

    private mutating func separate() {
        if fields > 0 { bytes.append(0x2C) }
        fields += 1
    }

    private mutating func appendDecimal(_ value: Int64) {
        if value == 0 { bytes.append(0x30); return }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[19 - count] = UInt8(magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            }
            if value < 0 { bytes.append(0x2D) }
            bytes.append(contentsOf: buffer[(20 - count)...])
        }
    }

    /// A header line.
    static func header(_ names: [String]) -> [UInt8] {
        var line = CSVLine()
        for name in names { line.field(name) }
        line.endLine()
        return line.bytes
    }
}
