import Basics

/// Typed access to the members of a postback object. Signed fields are strict where the signed text
/// is at stake (no control or invisible characters, canonical digits) and tolerant of another JSON form
/// of the same text; unsigned fields are never fatal: normalized or dropped, with a `PostbackFlag`.
///
/// Absent and `null` both mean "not present" for optional fields: Apple documents only absence, and a
/// relay that writes `null` for a missing field should not turn a good postback into a rejected one.
/// (For a signed optional field that is harmless: if the field was in fact signed, the message built
/// without it does not verify.)
struct FieldReader {
    let object: JSONObject
    /// "" for the body itself, or e.g. "JWS payload " so messages say where a field lives.
    let place: String

    init(_ object: JSONObject, place: String = "") {
        self.object = object
        self.place = place
    }

    private func value(_ name: String) -> JSONValue? {
        guard let value = object[name], value != .null else { return nil }
        return value
    }

    private func missing(_ name: String) -> PostbackRejection {
        .malformed("\(place)\(name) is required but missing")
    }

    private func wrongType(_ name: String, expected: String, got value: JSONValue) -> PostbackRejection {
        .malformed("\(place)\(name) must be \(expected), got \(value.kindDescription)")
    }

    // MARK: Strings

    /// A string value without controls or invisible characters (U+2063 would let a value shift fields
    /// in SKAdNetwork's joined message).
    func string(_ name: String) throws(PostbackRejection) -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let string) = value else { throw wrongType(name, expected: "a string", got: value) }
        if let bad = UnicodeSafety.firstControlOrInvisible(in: string) {
            throw .malformed("\(place)\(name) contains \(UnicodeSafety.describe(bad)), which is not allowed in a postback value")
        }
        guard !string.isEmpty else { throw .malformed("\(place)\(name) is an empty string") }
        return string
    }

    func requiredString(_ name: String) throws(PostbackRejection) -> String {
        guard let string = try string(name) else { throw missing(name) }
        return string
    }

    /// A signed text of digits (`source-identifier`): a JSON string, used verbatim, or a JSON number
    /// whose literal text is only digits, which is the same signed text (flagged `normalized`). A
    /// number cannot carry leading zeros, so `"0042"` sent as `42` is another message and fails the
    /// signature, as it should; `42.0`, `4.2e1` or `-42` are no digit text and stay malformed.
    func requiredSignedDigits(_ name: String, field: PostbackFlag.Field, flags: inout [PostbackFlag]) throws(PostbackRejection)
        -> String
    {
        guard case .number(let number)? = value(name) else { return try requiredString(name) }
        let text = number.text
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw .malformed("\(place)\(name) must be a string of digits (or a JSON number of only digits), got \(text)")
        }
        flags.append(PostbackFlag(field: field, action: .normalized, raw: text, note: "number read as the digits it signs"))
        return text
    }

    /// SKAdNetwork 4 / AdAttributionKit `source-identifier` as Apple documents it: 2, 3 or 4 ASCII
    /// digits. Any other signed text is kept verbatim (leading zeros included) and flagged.
    static func isKnownSourceIdentifier(_ value: String) -> Bool {
        let digits = value.utf8
        return (2...4).contains(digits.count) && digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
    }

    // MARK: Numbers

    /// An identifier (`app-id`, `campaign-id`, `source-app-id`, item identifiers): a non-negative JSON
    /// integer, or a string of digits in canonical form, as relays sometimes send. Either way the signed
    /// message renders it as the same base-10 digits.
    func identifier(_ name: String) throws(PostbackRejection) -> Int64? {
        guard let value = value(name) else { return nil }
        return try identifier(name, value: value)
    }

    private func identifier(_ name: String, value: JSONValue) throws(PostbackRejection) -> Int64 {
        let text: String
        switch value {
        case .number(let number):
            guard number.isInteger else { throw .malformed("\(place)\(name) must be an integer, got \(number.text)") }
            text = number.text
        case .string(let string):
            guard !string.isEmpty, string.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw .malformed(
                    "\(place)\(name) must be an integer or a string of digits, got \"\(JSONWriter.escapedForMessage(string))\"")
            }
            guard string == "0" || string.utf8.first != UInt8(ascii: "0") else {
                throw .malformed("\(place)\(name) \"\(string)\" has a leading zero")
            }
            text = string
        default:
            throw wrongType(name, expected: "an integer", got: value)
        }
        if text.hasPrefix("-") { throw .malformed("\(place)\(name) must not be negative, got \(text)") }
        guard let parsed = Int64(text) else { throw .malformed("\(place)\(name) \(text) is too large (above 2^63 - 1)") }
        return parsed
    }

    func requiredIdentifier(_ name: String) throws(PostbackRejection) -> Int64 {
        guard let id = try identifier(name) else { throw missing(name) }
        return id
    }

    // MARK: Signed fields in any JSON form of the same signed text

    /// A signed integer (`fidelity-type`, `postback-sequence-index`, identifiers): a JSON integer, or
    /// a canonical digit string, which is signed as the same digits. The string form is flagged
    /// `normalized`; anything else (negative, exponent, leading zero) cannot be rendered as Apple
    /// signed it and stays malformed.
    func signedInteger(_ name: String, field: PostbackFlag.Field, flags: inout [PostbackFlag]) throws(PostbackRejection) -> Int64?
    {
        guard let value = value(name) else { return nil }
        let number = try identifier(name, value: value)
        if case .string = value {
            flags.append(
                PostbackFlag(
                    field: field, action: .normalized, raw: Self.rawText(value), note: "digit string read as the integer it signs"
                ))
        }
        return number
    }

    func requiredSignedInteger(_ name: String, field: PostbackFlag.Field, flags: inout [PostbackFlag]) throws(PostbackRejection)
        -> Int64
    {
        guard let number = try signedInteger(name, field: field, flags: &flags) else { throw missing(name) }
        return number
    }

    /// A signed boolean: JSON `true`/`false`, or the strings `"true"`/`"false"` (the same signed text,
    /// flagged `normalized`). `1`, `0`, `"True"` are not the signed text and stay malformed.
    func requiredSignedBool(_ name: String, field: PostbackFlag.Field, flags: inout [PostbackFlag]) throws(PostbackRejection)
        -> Bool
    {
        guard let value = value(name) else { throw missing(name) }
        switch value {
        case .bool(let flag): return flag
        case .string("true"), .string("false"):
            flags.append(
                PostbackFlag(
                    field: field, action: .normalized, raw: Self.rawText(value), note: "string read as the boolean it signs"))
            return value == .string("true")
        default:
            throw wrongType(name, expected: "a JSON boolean (true or false, or the strings \"true\"/\"false\")", got: value)
        }
    }

    // MARK: Unsigned observation fields shared by both protocols: never fatal

    /// An unsigned value is read leniently: what cannot be used is dropped and flagged, never thrown.
    private func unsignedString(_ name: String, field: PostbackFlag.Field, flags: inout [PostbackFlag]) -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let string) = value, !string.isEmpty else {
            flags.append(
                PostbackFlag(
                    field: field, action: .dropped, raw: Self.rawText(value),
                    note: "expected a non-empty string, got \(value.kindDescription)"))
            return nil
        }
        if let bad = UnicodeSafety.firstControlOrInvisible(in: string) {
            flags.append(
                PostbackFlag(
                    field: field, action: .dropped, raw: Self.rawText(value), note: "contains \(UnicodeSafety.describe(bad))"))
            return nil
        }
        return string
    }

    /// `conversion-value` (0–63) and `coarse-conversion-value` (`low`/`medium`/`high`, any case).
    /// A fine value is only sent in the first window of a winning postback; Apple sends at most one
    /// of the two, and when both come the fine one is kept (it says more). A value that is not allowed
    /// (`whyNoFine`, `whyNoCoarse`: e.g. on a non-winning postback, which never carries one) is dropped
    /// and flagged.
    func conversionValues(
        fineAllowed: Bool, coarseAllowed: Bool, whyNoFine: String, whyNoCoarse: String, flags: inout [PostbackFlag]
    ) -> (
        fine: Int?, coarse: CoarseConversionValue?
    ) {
        var fine: Int? = nil
        if let value = value("conversion-value") {
            let raw = Self.rawText(value)
            var parsed: Int? = nil
            switch value {
            case .number(let number) where number.isInteger:
                parsed = Int(number.text)
            case .string(let text)
            where !text.isEmpty && text.utf8.count <= 3
                && text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }):
                parsed = Int(text)
                if let number = parsed, (0...63).contains(number), fineAllowed {
                    flags.append(
                        PostbackFlag(
                            field: .conversionValue, action: .normalized, raw: raw, note: "digit string read as \(number)"))
                }
            default:
                flags.append(
                    PostbackFlag(
                        field: .conversionValue, action: .dropped, raw: raw,
                        note: "expected an integer 0–63, got \(value.kindDescription)"))
            }
            if let number = parsed {
                if !(0...63).contains(number) {
                    flags.append(PostbackFlag(field: .conversionValue, action: .dropped, raw: raw, note: "out of range 0–63"))
                } else if !fineAllowed {
                    flags.append(PostbackFlag(field: .conversionValue, action: .dropped, raw: raw, note: whyNoFine))
                } else {
                    fine = number
                }
            }
        }
        var coarse: CoarseConversionValue? = nil
        if let text = unsignedString("coarse-conversion-value", field: .coarseConversionValue, flags: &flags) {
            let raw = Self.rawText(.string(text))
            if let known = CoarseConversionValue(rawValue: text) {
                coarse = known
            } else if let folded = CoarseConversionValue(rawValue: text.asciiLowercased) {
                coarse = folded
                flags.append(
                    PostbackFlag(
                        field: .coarseConversionValue, action: .normalized, raw: raw, note: "case-folded to \(folded.rawValue)"))
            } else {
                flags.append(
                    PostbackFlag(field: .coarseConversionValue, action: .dropped, raw: raw, note: "not low, medium or high"))
            }
            if coarse != nil, !coarseAllowed {
                coarse = nil
                flags.append(
                    PostbackFlag(
                        field: .coarseConversionValue, action: .dropped, raw: raw, note: whyNoCoarse))
            } else if coarse != nil, fine != nil {
                coarse = nil
                flags.append(
                    PostbackFlag(
                        field: .coarseConversionValue, action: .dropped, raw: raw,
                        note: "sent together with conversion-value; Apple sends at most one, the fine value is kept"))
            }
        }
        return (fine, coarse)
    }

    /// `country-code`: two ASCII letters, upper-cased (`us` → `US`); anything else dropped. Apple
    /// calls it "ISO 3166-2" but sends two letters (spec §8).
    func countryCode(flags: inout [PostbackFlag]) -> String? {
        guard let code = unsignedString("country-code", field: .countryCode, flags: &flags) else { return nil }
        let raw = Self.rawText(.string(code))
        guard code.utf8.count == 2, code.utf8.allSatisfy({ ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") })
        else {
            flags.append(PostbackFlag(field: .countryCode, action: .dropped, raw: raw, note: "not a two-letter country code"))
            return nil
        }
        let upper = code.asciiUppercased
        if upper != code {
            flags.append(PostbackFlag(field: .countryCode, action: .normalized, raw: raw, note: "upper-cased to \(upper)"))
        }
        return upper
    }

    /// AdAttributionKit `ad-interaction-type`: `click`/`view`, any case; anything else dropped.
    func adInteraction(flags: inout [PostbackFlag]) -> AdInteraction? {
        guard let text = unsignedString("ad-interaction-type", field: .adInteractionType, flags: &flags) else { return nil }
        let raw = Self.rawText(.string(text))
        if let known = AdInteraction(rawValue: text) { return known }
        if let folded = AdInteraction(rawValue: text.asciiLowercased) {
            flags.append(
                PostbackFlag(field: .adInteractionType, action: .normalized, raw: raw, note: "case-folded to \(folded.rawValue)"))
            return folded
        }
        flags.append(PostbackFlag(field: .adInteractionType, action: .dropped, raw: raw, note: "not click or view"))
        return nil
    }

    /// A value as JSON text, for a flag's `raw` (strings quoted, containers abbreviated).
    static func rawText(_ value: JSONValue) -> String {
        switch value {
        case .string(let string):
            var bytes: [UInt8] = []
            JSONWriter.appendQuoted(string, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        case .number(let number): return number.text
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        case .object: return "{…}"
        case .array: return "[…]"
        }
    }
}

extension String {
    /// ASCII-only case mapping: Unicode case rules must not turn a sender's text into a known value,
    /// and grouping (ad network ids in aggregation) must not depend on the platform's tables.
    package var asciiLowercased: String {
        String(decoding: utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    package var asciiUppercased: String {
        String(decoding: utf8.map { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") ? $0 & ~0x20 : $0 }, as: UTF8.self)
    }
}
