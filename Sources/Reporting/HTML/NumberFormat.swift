import AggregateSchema
import Basics
import Postbacks

/// Numbers as people read them, the same on every machine: written by hand rather than with
/// Foundation's formatters, whose output depends on the locale and the ICU version. Counts and shares
/// use integer arithmetic, so a rerun writes the same digits.
enum NumberFormat {
    /// `1234567` → `1,234,567`.
    static func count(_ value: Int) -> String { grouped(String(value.magnitude), negative: value < 0) }

    /// An amount with exactly two decimals, rounded half up: `1234.565` → `1,234.57`.
    static func money(_ amount: Money) -> String {
        let cents = (amount.micros.magnitude + 5_000) / 10_000
        let fraction = cents % 100
        return grouped(String(cents / 100), negative: amount.micros < 0) + "." + (fraction < 10 ? "0" : "") + String(fraction)
    }

    /// An amount exactly as the aggregate tables hold it, with grouped thousands: `1,234.5`.
    static func exactMoney(_ amount: Money) -> String {
        let text = amount.description
        let negative = text.hasPrefix("-")
        let unsigned = negative ? String(text.dropFirst()) : text
        guard let point = unsigned.firstIndex(of: ".") else { return grouped(unsigned, negative: negative) }
        return grouped(String(unsigned[..<point]), negative: negative) + unsigned[point...]
    }

    /// `amount ÷ count` with exactly two decimals, rounded half up once (not via micro-units):
    /// a cost per install. `–` when `count` is 0.
    static func money(_ amount: Money, per count: Int) -> String {
        guard count > 0 else { return "–" }
        // Cents of amount ÷ count: (2·micros + count·10⁴) div (2·count·10⁴), in 128 bits.
        let micros = Int128(amount.micros.magnitude)
        let divisor = Int128(count) * 10_000
        let cents = (2 * micros + divisor) / (2 * divisor)
        let text = money(Money(micros: Int64(cents * 10_000)))
        return amount.micros < 0 ? "-" + text : text
    }

    /// `numerator ÷ denominator` (two amounts of one currency) with two decimals, rounded half up:
    /// a return on spend, `0.82`. `–` when `denominator` is not positive.
    static func ratio(_ numerator: Money, _ denominator: Money) -> String {
        guard denominator.micros > 0 else { return "–" }
        let part = Int128(numerator.micros.magnitude)
        let whole = Int128(denominator.micros)
        let hundredths = (200 * part + whole) / (2 * whole)
        let fraction = Int(hundredths % 100)
        return (numerator.micros < 0 ? "-" : "") + grouped(String(hundredths / 100), negative: false) + "."
            + (fraction < 10 ? "0" : "") + String(fraction)
    }

    /// `part` of `whole` as a percentage with one decimal, rounded half up: `12.3%`; `–` when `whole` is 0.
    static func percent(_ part: Int, of whole: Int) -> String {
        guard whole > 0 else { return "–" }
        let tenths = (part * 2_000 + whole) / (2 * whole)
        return String(tenths / 10) + "." + String(tenths % 10) + "%"
    }

    /// The change from `previous` to `current` as a signed percentage with one decimal, rounded half
    /// away from zero: `+12.3%`, `-4.0%`, `0.0%`; `–` when `previous` is not positive.
    static func change(_ current: Int64, from previous: Int64) -> String {
        guard previous > 0 else { return "–" }
        let difference = Int128(current) - Int128(previous)
        let tenths = (2_000 * difference.magnitude + UInt128(previous)) / (2 * UInt128(previous))
        let sign = tenths == 0 ? "" : (difference < 0 ? "-" : "+")
        return sign + String(tenths / 10) + "." + String(tenths % 10) + "%"
    }

    /// `part` of `whole` as a whole percentage, rounded half up: `38%` (labels inside bars).
    static func wholePercent(_ part: Int, of whole: Int) -> String {
        guard whole > 0 else { return "–" }
        return String((part * 200 + whole) / (2 * whole)) + "%"
    }

    /// `part / whole`, for drawing; 0 when `whole` is 0.
    static func ratio(_ part: Int, of whole: Int) -> Double { whole > 0 ? Double(part) / Double(whole) : 0 }

    /// An axis tick: `0`, `250`, `1,500`, `12k`, `2.5M`; `fractionDigits` for small steps (`0.5`).
    static func tick(_ value: Double, fractionDigits: Int = 0) -> String {
        let magnitude = abs(value)
        if magnitude >= 1_000_000 { return trimmed(value / 1_000_000) + "M" }
        if magnitude >= 10_000 { return trimmed(value / 1_000) + "k" }
        guard fractionDigits > 0 else { return count(Int(value.rounded())) }
        return fixed(value, fractionDigits: fractionDigits)
    }

    /// A coordinate or length in the SVG, with at most one decimal (`12.5`, `40`): short and stable.
    static func svg(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let magnitude = tenths.magnitude
        return magnitude % 10 == 0 ? sign + String(magnitude / 10) : sign + String(magnitude / 10) + "." + String(magnitude % 10)
    }

    /// A day on an axis: `Mar 2`.
    static func shortDay(_ day: UTCDay) -> String {
        let (_, month, date) = day.components
        return monthNames[month - 1] + " " + String(date)
    }

    /// A day in a tooltip: `Mon 2 Mar 2026`.
    static func longDay(_ day: UTCDay) -> String {
        let (year, month, date) = day.components
        // 1970-01-01 was a Thursday.
        let weekday = weekdayNames[((day.daysSinceEpoch % 7) + 7 + 3) % 7]
        return "\(weekday) \(date) \(monthNames[month - 1]) \(year)"
    }

    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    private static func fixed(_ value: Double, fractionDigits: Int) -> String {
        var scale = 1
        for _ in 0..<fractionDigits { scale *= 10 }
        let scaled = Int((value * Double(scale)).rounded())
        let whole = count(scaled / scale)
        var fraction = String((scaled % scale).magnitude)
        while fraction.count < fractionDigits { fraction = "0" + fraction }
        return whole + "." + fraction
    }

    /// One decimal, dropped when zero: `12`, `2.5`.
    private static func trimmed(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return tenths % 10 == 0 ? count(tenths / 10) : count(tenths / 10) + "." + String((tenths % 10).magnitude)
    }

    private static func grouped(_ digits: String, negative: Bool) -> String {
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return (negative ? "-" : "") + result
    }
}
