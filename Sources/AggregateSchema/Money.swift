/// An amount of money in millionths of a currency unit: exact, so sums over millions of postbacks
/// come out the same on every run and in every engine (a `Double` sum depends on the order of terms).
///
/// Six decimal places is the `decimal(18,6)` of the output contract; schema amounts with more are
/// rejected rather than rounded.
package struct Money: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var micros: Int64

    package init(micros: Int64) { self.micros = micros }

    package static let zero = Money(micros: 0)
    /// The digits after the point: millionths.
    package static let scaleDigits = 6

    package static func < (lhs: Money, rhs: Money) -> Bool { lhs.micros < rhs.micros }

    /// Parses a non-negative decimal such as `0.99`, `100` or `4.500000` (what a JSON number literal
    /// holds). Exponents, signs and more than six decimals give nil.
    package init?(decimal text: String) { self.init(decimalUTF8: text.utf8) }

    /// `init(decimal:)` over UTF-8 bytes (a field of a CSV line, without building a String).
    package init?(decimalUTF8 text: some Sequence<UInt8>) {
        var whole: Int64 = 0
        var fraction: Int64 = 0
        var fractionDigits = 0
        var seenPoint = false
        var digits = 0
        for byte in text {
            if byte == UInt8(ascii: ".") {
                guard !seenPoint, digits > 0 else { return nil }
                seenPoint = true
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte - UInt8(ascii: "0"))
            if seenPoint {
                fractionDigits += 1
                guard fractionDigits <= 6 else { return nil }
                fraction = fraction * 10 + digit
            } else {
                digits += 1
                guard digits <= 12 else { return nil }
                whole = whole * 10 + digit
            }
        }
        guard digits > 0, !seenPoint || fractionDigits > 0 else { return nil }
        for _ in fractionDigits..<6 { fraction *= 10 }
        micros = whole * 1_000_000 + fraction
    }

    /// The shortest exact decimal: `2.99`, `150`, `0.000001`. No exponent, no trailing zeros.
    package var description: String {
        let parts = shortestDecimal
        let sign = parts.isNegative ? "-" : ""
        guard parts.fractionDigits > 0 else { return sign + String(parts.whole) }
        let digits = String(parts.fraction)
        return sign + String(parts.whole) + "." + String(repeating: "0", count: parts.fractionDigits - digits.count) + digits
    }

    /// The parts of the shortest exact decimal (`description`; the CSV writer writes them without a
    /// String): the fraction without trailing zeros, shown with `fractionDigits` digits (0: no point).
    package var shortestDecimal: (isNegative: Bool, whole: UInt64, fraction: UInt64, fractionDigits: Int) {
        let magnitude = micros.magnitude
        var fraction = magnitude % 1_000_000
        guard fraction != 0 else { return (micros < 0, magnitude / 1_000_000, 0, 0) }
        var width = 6
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        return (micros < 0, magnitude / 1_000_000, fraction, width)
    }

    /// `self × count`, nil on overflow.
    package func times(_ count: Int64) -> Money? {
        let (product, overflow) = micros.multipliedReportingOverflow(by: count)
        return overflow ? nil : Money(micros: product)
    }

    /// `self + other`, nil on overflow.
    package func plus(_ other: Money) -> Money? {
        let (sum, overflow) = micros.addingReportingOverflow(other.micros)
        return overflow ? nil : Money(micros: sum)
    }
}
