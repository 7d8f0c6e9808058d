import Basics

/// Strict typed reading of an impression object (JSON Lines in `postback impression sign|verify`).
///
/// Stricter than a postback's `FieldReader` on forms: an impression is written by the ad network
/// itself, so a value has exactly one JSON form (integers as JSON integers, texts as strings) and
/// every member must be known. The strict parser has already refused duplicate keys, invalid UTF-8
/// and raw control characters; escaped controls and invisible characters are refused here, as a
/// U+2063 inside a value would shift SKAdNetwork's joined fields.
struct ImpressionFields {
    let object: JSONObject
    /// "" or e.g. "JWS payload ", so messages say where a member lives.
    let place: String

    init(_ object: JSONObject, place: String = "", known: Set<String>) throws(PostbackRejection) {
        self.object = object
        self.place = place
        for member in object.members where !known.contains(member.key) {
            let name = member.key
            let hint = Suggestion.closest(to: name, in: known.sorted()).map { " (did you mean '\($0)'?)" } ?? ""
            throw .malformed("\(place)\(JSONWriter.escapedForMessage(name)) is not a member of this impression\(hint)")
        }
    }

    func has(_ name: String) -> Bool { object[name] != nil }

    func string(_ name: String) throws(PostbackRejection) -> String? {
        guard let value = object[name] else { return nil }
        guard case .string(let text) = value else {
            throw .malformed("\(place)\(name) must be a string, got \(value.kindDescription)")
        }
        if let bad = UnicodeSafety.firstControlOrInvisible(in: text) {
            throw .malformed("\(place)\(name) contains \(UnicodeSafety.describe(bad)), which an impression value cannot hold")
        }
        guard !text.isEmpty else { throw .malformed("\(place)\(name) is an empty string") }
        return text
    }

    func requiredString(_ name: String) throws(PostbackRejection) -> String {
        guard let text = try string(name) else { throw .malformed("\(place)\(name) is required but missing") }
        return text
    }

    /// A non-negative JSON integer (no fraction, exponent, sign or quotes: the device rebuilds the
    /// number's decimal digits, and another form would sign other text) within `range`.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws(PostbackRejection) -> Int64? {
        guard let value = object[name] else { return nil }
        guard case .number(let number) = value, number.isInteger else {
            throw .malformed("\(place)\(name) must be an integer, got \(value.kindDescription)")
        }
        guard let parsed = number.int64Value, range.contains(parsed) else {
            throw .malformed("\(place)\(name) must be from \(range.lowerBound) to \(range.upperBound), got \(number.text)")
        }
        return parsed
    }

    func requiredInteger(_ name: String, in range: ClosedRange<Int64>) throws(PostbackRejection) -> Int64 {
        guard let number = try integer(name, in: range) else { throw .malformed("\(place)\(name) is required but missing") }
        return number
    }

    func bool(_ name: String) throws(PostbackRejection) -> Bool? {
        guard let value = object[name] else { return nil }
        guard case .bool(let flag) = value else {
            throw .malformed("\(place)\(name) must be true or false, got \(value.kindDescription)")
        }
        return flag
    }

    /// An identifier Apple wants lower-case (ad network ids, domains): refused, not lower-cased,
    /// because the id is also in the app's Info.plist and in every postback; a silent fix here
    /// would sign an id nobody else uses.
    func lowerCaseString(_ name: String, why: String) throws(PostbackRejection) -> String {
        let text = try requiredString(name)
        guard !text.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else {
            throw .malformed("\(place)\(name) \"\(JSONWriter.escapedForMessage(text))\" must be lower-case (\(why))")
        }
        return text
    }

    /// A UUID in its 8-4-4-4-12 hexadecimal form, either case.
    static func isUUID(_ text: String) -> Bool {
        guard text.utf8.count == 36 else { return false }
        // Over the bytes in place: iterating the UTF-8 view costs about 40 instructions a byte.
        if let checked = text.utf8.withContiguousStorageIfAvailable({ isUUID(bytes: $0) }) { return checked }
        return Array(text.utf8).withUnsafeBufferPointer { isUUID(bytes: $0) }
    }

    private static func isUUID(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count == 36 else { return false }
        for index in 0..<36 {
            let byte = bytes[index]
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard isHexDigit(byte) else { return false }
            }
        }
        return true
    }

    /// A UUID in the lower case Apple signs it in; the same string, not a copy, when it already is.
    static func lowerCasedUUID(_ text: String) -> String {
        let hasUpperCase =
            text.utf8.withContiguousStorageIfAvailable { bytes in
                bytes.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") })
            } ?? true
        return hasUpperCase ? text.lowercased() : text
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    /// UNIX time in milliseconds (Apple: "UNIX time in milliseconds"). A value below 10^12 is
    /// September 2001 in milliseconds but today in seconds: refused as the common mistake.
    func timestamp(_ name: String) throws(PostbackRejection) -> Int64 {
        let value = try requiredInteger(name, in: 0...9_999_999_999_999)
        guard value >= 1_000_000_000_000 else {
            throw .malformed(
                "\(place)\(name) \(value) is not UNIX time in milliseconds (it looks like seconds; Apple wants milliseconds)")
        }
        return value
    }
}

extension ImpressionFields {
    static let adNetworkIDRule = "Apple: \"Lowercase the ad network ID string; otherwise, the system doesn't recognize it\""
}
