#if canImport(Glibc)
    import Glibc
#endif

/// A UTC instant with microsecond precision, formatted as ISO 8601 (`2026-12-02T13:14:15.123456Z`).
///
/// Written by hand (Howard Hinnant's civil-date algorithms) because Foundation's formatters are slow
/// on the ingest path and depend on locale and time zone settings; everything here is UTC.
package struct UTCTimestamp: Sendable, Comparable, Hashable, CustomStringConvertible {
    package let microsecondsSinceEpoch: Int64

    package init(microsecondsSinceEpoch: Int64) { self.microsecondsSinceEpoch = microsecondsSinceEpoch }

    package static func now() -> UTCTimestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UTCTimestamp(microsecondsSinceEpoch: Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1000)
    }

    package static func < (lhs: Self, rhs: Self) -> Bool { lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch }

    /// The UTC calendar day.
    package var day: UTCDay {
        UTCDay(daysSinceEpoch: Int(microsecondsSinceEpoch.floorDivided(by: 86_400_000_000)))
    }

    /// `YYYY-MM-DDTHH:MM:SS.ffffffZ`, written digit by digit: every stored record carries one.
    package var description: String {
        let micros = microsecondsSinceEpoch.floorModulo(86_400_000_000)
        let seconds = Int(micros / 1_000_000)
        let fraction = Int(micros % 1_000_000)
        let (year, month, dayOfMonth) = day.components
        guard (0...9999).contains(year) else {
            return day.description + "T" + twoDigits(seconds / 3600) + ":" + twoDigits(seconds / 60 % 60) + ":"
                + twoDigits(seconds % 60) + "." + String(fraction).leftPadded(to: 6) + "Z"
        }
        return String(unsafeUninitializedCapacity: 27) { buffer in
            func put(_ value: Int, digits: Int, at offset: Int) {
                var value = value
                for position in stride(from: offset + digits - 1, through: offset, by: -1) {
                    buffer[position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, digits: 4, at: 0)
            put(month, digits: 2, at: 5)
            put(dayOfMonth, digits: 2, at: 8)
            put(seconds / 3600, digits: 2, at: 11)
            put(seconds / 60 % 60, digits: 2, at: 14)
            put(seconds % 60, digits: 2, at: 17)
            put(fraction, digits: 6, at: 20)
            for (offset, character) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (26, "Z")]
                as [(Int, Unicode.Scalar)]
            {
                buffer[offset] = UInt8(ascii: character)
            }
            return 27
        }
    }

    /// Parses exactly the format `description` writes.
    package init?(iso8601 text: String) {
        var text = text
        guard
            let micros = text.withUTF8({ utf8 in utf8.baseAddress.flatMap { Self.microseconds(iso8601: $0, count: utf8.count) } })
        else { return nil }
        microsecondsSinceEpoch = micros
    }

    /// The one parser of `YYYY-MM-DDTHH:MM:SS.ffffffZ`, on bytes: the fast spool reader calls it for
    /// every record (inlinable so that costs no String and no call).
    @inlinable
    package static func microseconds(iso8601 text: UnsafePointer<UInt8>, count: Int) -> Int64? {
        guard count == 27, text[4] == UInt8(ascii: "-"), text[7] == UInt8(ascii: "-"), text[10] == UInt8(ascii: "T"),
            text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"), text[19] == UInt8(ascii: "."),
            text[26] == UInt8(ascii: "Z")
        else { return nil }
        @inline(__always) func digits(_ from: Int, _ length: Int) -> Int? {
            var value = 0
            for offset in from..<(from + length) {
                let digit = text[offset] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        guard let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2), let hour = digits(11, 2),
            let minute = digits(14, 2), let second = digits(17, 2), let fraction = digits(20, 6),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        let date = UTCDay(year: year, month: month, day: day)
        // Impossible dates (2026-02-30) do not survive the round trip.
        if day > 28 { guard date.components == (year, month, day) else { return nil } }
        return Int64(date.daysSinceEpoch) * 86_400_000_000 + Int64(hour * 3600 + minute * 60 + second) * 1_000_000
            + Int64(fraction)
    }
}

/// A UTC calendar day (`YYYY-MM-DD`), the partition key of every store directory.
package struct UTCDay: Sendable, Comparable, Hashable, CustomStringConvertible {
    package let daysSinceEpoch: Int

    package init(daysSinceEpoch: Int) { self.daysSinceEpoch = daysSinceEpoch }

    package init(year: Int, month: Int, day: Int) {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        daysSinceEpoch = era * 146_097 + dayOfEra - 719_468
    }

    /// Parses `YYYY-MM-DD`, rejecting impossible dates such as 2026-02-30.
    package init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = digits(bytes[0..<4]), let month = digits(bytes[5..<7]), let day = digits(bytes[8..<10]),
            (1...12).contains(month), day >= 1
        else { return nil }
        let candidate = UTCDay(year: year, month: month, day: day)
        guard candidate.components == (year, month, day) else { return nil }
        self = candidate
    }

    package var components: (year: Int, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    package static func < (lhs: Self, rhs: Self) -> Bool { lhs.daysSinceEpoch < rhs.daysSinceEpoch }

    package func adding(days: Int) -> UTCDay { UTCDay(daysSinceEpoch: daysSinceEpoch + days) }

    package var description: String {
        let (year, month, day) = components
        return String(year).leftPadded(to: 4) + "-" + twoDigits(month) + "-" + twoDigits(day)
    }
}

private func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

private func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
    var value = 0
    for byte in bytes {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
    }
    return value
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    fileprivate func floorModulo(_ divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
