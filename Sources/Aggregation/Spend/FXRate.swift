package import AggregateSchema
package import Basics
import PostbackCrypto

/// A daily exchange rate from `--fx FILE` (`date,from,to,rate`: one `from` is `rate` `to`), exact to
/// ten decimal places, for bringing spend into the revenue's currency (docs/aggregate.md, "Currencies").
package struct FXRate: Sendable, Hashable {
    package static let scaleDigits = CohortColumn.fxRateScaleDigits
    static let scale: Int128 = 10_000_000_000

    /// The rate times 10^10.
    package var scaled: Int128

    package init?(decimal text: String) {
        var whole: Int128 = 0
        var fraction: Int128 = 0
        var fractionDigits = 0
        var seenPoint = false
        var digits = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard !seenPoint, digits > 0 else { return nil }
                seenPoint = true
                continue
            }
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            if seenPoint {
                fractionDigits += 1
                guard fractionDigits <= Self.scaleDigits else { return nil }
                fraction = fraction * 10 + Int128(byte - 0x30)
            } else {
                digits += 1
                guard digits <= 12 else { return nil }
                whole = whole * 10 + Int128(byte - 0x30)
            }
        }
        guard digits > 0, !seenPoint || fractionDigits > 0 else { return nil }
        for _ in fractionDigits..<Self.scaleDigits { fraction *= 10 }
        scaled = whole * Self.scale + fraction
        guard scaled > 0 else { return nil }
    }

    /// `money` in the other currency: its millionths times the rate, rounded half up.
    package func convert(_ money: Money) -> Money {
        let product = Int128(money.micros) * scaled
        return Money(micros: Int64((product * 2 + Self.scale) / (2 * Self.scale)))
    }

    /// The shortest exact decimal (`0.9234`, `1`).
    package var description: String {
        let whole = scaled / Self.scale
        var fraction = scaled % Self.scale
        guard fraction > 0 else { return String(whole) }
        var digits = Self.scaleDigits
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let text = String(fraction)
        return String(whole) + "." + String(repeating: "0", count: digits - text.count) + text
    }
}

/// The rates of an `--fx` file, by day and currency pair.
package struct FXTable: Sendable {
    package struct Pair: Hashable, Sendable {
        var date: UTCDay
        var from: String
        var to: String
    }

    var rates: [Pair: FXRate] = [:]
    /// The file's name and SHA-256, for the cohort manifests.
    package var source: (path: String, bytes: Int, sha256: String)?

    package static let empty = FXTable()

    init() {}

    package init(bytes: [UInt8], name: String) throws {
        let csv: UserCSV
        do {
            csv = try UserCSV(bytes)
        } catch {
            throw AggregationError.spend(file: name, csv: error)
        }
        let expected = ["date", "from", "to", "rate"]
        guard let header = csv.records.first, header.fields.map(\.trimmingASCIISpaces) == expected else {
            throw AggregationError.spend(
                "\(name):1: the header must be date,from,to,rate (one 'from' is 'rate' 'to', e.g. 2026-03-10,USD,EUR,0.9234)")
        }
        for record in csv.records.dropFirst() {
            guard record.fields.count == 4 else {
                throw AggregationError.spend("\(name):\(record.line): 4 fields expected (date,from,to,rate)")
            }
            let fields = record.fields.map(\.trimmingASCIISpaces)
            guard let date = UTCDay(fields[0]) else {
                throw AggregationError.spend("\(name):\(record.line):1: '\(fields[0])' is not a day (YYYY-MM-DD)")
            }
            for column in 1...2 where !CurrencyCode.isKnown(fields[column]) {
                throw AggregationError.spend(
                    "\(name):\(record.line):\(column + 1): '\(fields[column])' is not an ISO 4217 code (e.g. EUR, USD)")
            }
            guard let rate = FXRate(decimal: fields[3]) else {
                throw AggregationError.spend(
                    "\(name):\(record.line):4: rate '\(fields[3])' is not a positive decimal with at most ten decimals")
            }
            let pair = Pair(date: date, from: fields[1], to: fields[2])
            guard rates[pair] == nil else {
                throw AggregationError.spend("\(name):\(record.line): a second rate for \(fields[1])->\(fields[2]) on \(date)")
            }
            rates[pair] = rate
        }
        source = (name, bytes.count, SHA256.hash(bytes).description)
    }

    package func rate(on date: UTCDay, from: String, to: String) -> FXRate? {
        rates[Pair(date: date, from: from, to: to)]
    }
}
