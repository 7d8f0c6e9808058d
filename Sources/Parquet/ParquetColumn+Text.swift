import Basics

extension ParquetColumn {
    /// A value written as text, as a CSV file has it: a decimal integer (`-12`), `true`/`false`, a
    /// `YYYY-MM-DD` date, an exact decimal (`2.99`, `150`, `-0.5`) with at most the column's scale of
    /// fraction digits, a finite floating-point number (`0.25`, `1e-05`), or any bytes for a string; nil for null. Returns what is wrong with the text,
    /// or nil. The job reads whole blocks of rows through `CSVColumnReader`, whose per-column pass
    /// must give the same values as this field-by-field one (a test holds them equal).
    @inlinable
    package mutating func append(text field: UnsafeBufferPointer<UInt8>?) -> ParquetError? {
        guard let field else { return appendNullIfNullable() }
        switch type {
        case .string:
            stringBytes.append(contentsOf: field)
            stringStarts.append(stringBytes.count)
        case .decimal(_, let scale):
            guard let value = Self.decimal(field, scale: scale) else { return .invalid(field) }
            decimals.append(value)
        case .int64, .int32, .boolean, .date, .double:
            guard let value = Self.integerValue(field, type: type) else { return .invalid(field) }
            integers.append(value)
        }
        // The value is stored above without `append(_:)`'s checks, which the switch has made.
        presentRow()
        return nil
    }

    /// A decimal integer with an optional leading minus.
    @usableFromInline
    static func integer(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = text.first == 0x2D
        let digits = negative ? UnsafeBufferPointer(rebasing: text.dropFirst()) : text
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - 0x30) * (negative ? -1 : 1))
            guard !overflow, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// An exact decimal as an unscaled integer with `scale` places.
    @usableFromInline
    static func decimal(_ text: UnsafeBufferPointer<UInt8>, scale: Int) -> Int128? {
        // The first 18 digits in 64 bits (amounts rarely have more), the rest in 128.
        var small: UInt64 = 0
        var value: Int128 = 0
        var fractionDigits = 0
        var seenPoint = false
        var digits = 0
        let negative = text.first == 0x2D
        for byte in text.dropFirst(negative ? 1 : 0) {
            if byte == 0x2E, !seenPoint {
                seenPoint = true
                continue
            }
            guard byte >= 0x30, byte <= 0x39, digits < 38 else { return nil }
            if seenPoint {
                fractionDigits += 1
                guard fractionDigits <= scale else { return nil }
            }
            if digits < 18 {
                small = small &* 10 &+ UInt64(byte &- 0x30)
            } else {
                if digits == 18 { value = Int128(small) }
                value = value * 10 + Int128(byte &- 0x30)
            }
            digits += 1
        }
        guard digits > 0 else { return nil }
        if digits <= 18 { value = Int128(small) }
        var missing = scale - fractionDigits
        while missing > 0 {
            let step = min(missing, 18)
            var power: Int64 = 1
            for _ in 0..<step { power &*= 10 }
            let (scaled, overflow) = value.multipliedReportingOverflow(by: Int128(power))
            guard !overflow else { return nil }
            value = scaled
            missing -= step
        }
        return negative ? -value : value
    }
}

extension ParquetError {
    @usableFromInline
    static func invalid(_ field: UnsafeBufferPointer<UInt8>) -> ParquetError {
        .invalidValue(String(decoding: field, as: UTF8.self))
    }
}

extension ParquetColumn {
    /// An INT64, INT32, BOOLEAN, DATE or DOUBLE (its bit pattern) column's value from its text, as `append(text:)` reads it.
    @inlinable
    static func integerValue(_ field: UnsafeBufferPointer<UInt8>, type: ParquetType) -> Int64? {
        switch type {
        case .int64: return integer(field)
        case .int32:
            guard let value = integer(field), Int32(exactly: value) != nil else { return nil }
            return value
        case .boolean:
            if field.elementsEqual("true".utf8) { return 1 }
            if field.elementsEqual("false".utf8) { return 0 }
            return nil
        case .date: return date(field)
        case .double:
            guard let value = Double(String(decoding: field, as: UTF8.self)), value.isFinite else { return nil }
            return Int64(bitPattern: value.bitPattern)
        case .string, .decimal: return nil
        }
    }

    /// `YYYY-MM-DD` as days since 1970-01-01.
    @inlinable
    static func date(_ field: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard field.count == 10, field[4] == 0x2D, field[7] == 0x2D,
            let year = integer(UnsafeBufferPointer(rebasing: field[0..<4])),
            let month = integer(UnsafeBufferPointer(rebasing: field[5..<7])), (1...12).contains(month),
            let day = integer(UnsafeBufferPointer(rebasing: field[8..<10])), (1...31).contains(day)
        else { return nil }
        return Int64(UTCDay(year: Int(year), month: Int(month), day: Int(day)).daysSinceEpoch)
    }
}
