/// Typed access to the members of a postback object, with the strict rules of the issue and the spec:
/// exact JSON types, ranges, and no control or invisible format characters in any string value.
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

    func has(_ name: String) -> Bool { value(name) != nil }

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

    /// One of a fixed set of strings, e.g. `low`/`medium`/`high`.
    func choice<T: RawRepresentable<String>>(_ name: String, as type: T.Type, aliases: [String: T] = [:]) throws(PostbackRejection) -> T? {
        guard let string = try string(name) else { return nil }
        if let choice = T(rawValue: string) ?? aliases[string] { return choice }
        throw .malformed("\(place)\(name) must be \(Self.allowedList(T.self)), got \"\(JSONWriter.escapedForMessage(string))\"")
    }

    private static func allowedList<T: RawRepresentable<String>>(_ type: T.Type) -> String {
        if let all = (T.self as? any CaseIterable.Type)?.allCases as? [T] {
            return "one of " + all.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        }
        return "a known value"
    }

    /// SKAdNetwork 4 / AdAttributionKit `source-identifier`: a string of 2, 3 or 4 ASCII digits, kept
    /// verbatim (leading zeros included, because that is what was signed).
    func sourceIdentifier(_ name: String) throws(PostbackRejection) -> String {
        let value = try requiredString(name)
        let digits = value.utf8
        guard (2...4).contains(digits.count), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw .malformed("\(place)\(name) must be a string of 2 to 4 digits, got \"\(JSONWriter.escapedForMessage(value))\"")
        }
        return value
    }

    // MARK: Numbers

    /// An identifier (`app-id`, `campaign-id`, `source-app-id`, item identifiers): a non-negative JSON
    /// integer, or a string of digits in canonical form, as relays sometimes send. Either way the signed
    /// message renders it as the same base-10 digits.
    func identifier(_ name: String) throws(PostbackRejection) -> Int64? {
        guard let value = value(name) else { return nil }
        let text: String
        switch value {
        case .number(let number):
            guard number.isInteger else { throw .malformed("\(place)\(name) must be an integer, got \(number.text)") }
            text = number.text
        case .string(let string):
            guard !string.isEmpty, string.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw .malformed("\(place)\(name) must be an integer or a string of digits, got \"\(JSONWriter.escapedForMessage(string))\"")
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

    /// A small integer that must be a JSON number (not a string), within `range`.
    func integer(_ name: String, in range: ClosedRange<Int>) throws(PostbackRejection) -> Int? {
        guard let value = value(name) else { return nil }
        guard case .number(let number) = value, number.isInteger else {
            throw wrongType(name, expected: "an integer \(range.lowerBound)–\(range.upperBound)", got: value)
        }
        guard let parsed = Int(number.text), range.contains(parsed) else {
            throw .malformed("\(place)\(name) must be \(range.lowerBound)–\(range.upperBound), got \(number.text)")
        }
        return parsed
    }

    func requiredInteger(_ name: String, in range: ClosedRange<Int>) throws(PostbackRejection) -> Int {
        guard let number = try integer(name, in: range) else { throw missing(name) }
        return number
    }

    // MARK: Booleans

    /// A JSON `true`/`false`; `"true"`, `1` and `0` are rejected.
    func bool(_ name: String) throws(PostbackRejection) -> Bool? {
        guard let value = value(name) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(name, expected: "a JSON boolean (true or false)", got: value) }
        return flag
    }

    func requiredBool(_ name: String) throws(PostbackRejection) -> Bool {
        guard let flag = try bool(name) else { throw missing(name) }
        return flag
    }

    // MARK: Unsigned observation fields shared by both protocols

    /// `conversion-value` 0–63 and `coarse-conversion-value`, never both.
    func conversionValues() throws(PostbackRejection) -> (fine: Int?, coarse: CoarseConversionValue?) {
        let fine = try integer("conversion-value", in: 0...63)
        let coarse = try choice("coarse-conversion-value", as: CoarseConversionValue.self)
        if fine != nil, coarse != nil {
            throw .malformed("\(place)conversion-value and coarse-conversion-value are both present; Apple sends at most one")
        }
        return (fine, coarse)
    }

    /// `country-code`: two ASCII letters (ISO 3166-1 alpha-2), kept as sent.
    func countryCode() throws(PostbackRejection) -> String? {
        guard let code = try string("country-code") else { return nil }
        guard code.utf8.count == 2, code.utf8.allSatisfy({ ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") }) else {
            throw .malformed("\(place)country-code must be two letters, got \"\(JSONWriter.escapedForMessage(code))\"")
        }
        return code
    }
}
