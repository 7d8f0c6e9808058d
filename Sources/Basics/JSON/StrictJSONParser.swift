/// An RFC 8259 JSON parser that is stricter than Foundation's, because postbacks are attacker input.
///
/// It rejects what `JSONSerialization` and `JSONDecoder` let through or disagree on:
/// - duplicate keys in any object (Foundation's two parsers keep different copies of `{"a":1,"a":2}`),
/// - a byte order mark, UTF-16 and UTF-32 input, and any invalid UTF-8 (overlong forms, encoded
///   surrogates, code points past U+10FFFF), inside strings or out,
/// - lone surrogate escapes such as `\ud800`, and unescaped control characters in strings,
/// - nesting deeper than `maximumDepth` (a postback is one level deep; AdAttributionKit's JWS parts too),
/// - anything after the top-level value.
///
/// Escaped characters (`\u2063`, `\u0000`) are legal JSON and are decoded; which characters a *field*
/// may hold is the postback parser's business, checked on the decoded value.
package enum StrictJSONParser {
    /// Deep enough for relays that nest their own enrichment objects, far short of a stack risk.
    package static let defaultMaximumDepth = 8

    /// Parses one JSON document.
    /// - Parameters:
    ///   - keys: object keys to return as shared strings (the caller's, e.g. a postback's members).
    ///   - maximumDepth: the deepest nesting accepted.
    /// - Throws: `JSONParseError`, with the byte offset where the problem starts.
    package static func parse(
        _ bytes: UnsafeRawBufferPointer, keys: InternedKeys = .none, maximumDepth: Int = defaultMaximumDepth
    ) throws(JSONParseError) -> JSONValue {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONParseError(offset: 0, reason: "empty input")
        }
        var parser = Parser(
            base: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, keys: keys, maximumDepth: maximumDepth)
        return try parser.parseDocument()
    }

    package static func parse(
        _ bytes: [UInt8], keys: InternedKeys = .none, maximumDepth: Int = defaultMaximumDepth
    ) throws(JSONParseError) -> JSONValue {
        var result: Result<JSONValue, JSONParseError> = .success(.null)
        bytes.withUnsafeBytes { buffer in
            result = Result { () throws(JSONParseError) in try parse(buffer, keys: keys, maximumDepth: maximumDepth) }
        }
        return try result.get()
    }
}

private struct Parser {
    let base: UnsafePointer<UInt8>
    let count: Int
    let keys: InternedKeys
    let maximumDepth: Int
    var index = 0

    init(base: UnsafePointer<UInt8>, count: Int, keys: InternedKeys, maximumDepth: Int) {
        self.base = base
        self.count = count
        self.keys = keys
        self.maximumDepth = maximumDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        try rejectForeignEncodings()
        skipWhitespace()
        guard index < count else { throw JSONParseError(offset: index, reason: "empty input (only whitespace)") }
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == count else {
            throw JSONParseError(offset: index, reason: "unexpected \(describe(index)) after the end of the JSON value")
        }
        return value
    }

    /// A BOM or a NUL in the first two bytes means the sender did not send UTF-8 JSON.
    func rejectForeignEncodings() throws(JSONParseError) {
        if count >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF {
            throw JSONParseError(offset: 0, reason: "UTF-8 byte order mark is not allowed (RFC 8259 §8.1)")
        }
        if count >= 2, (base[0] == 0xFE && base[1] == 0xFF) || (base[0] == 0xFF && base[1] == 0xFE) {
            throw JSONParseError(offset: 0, reason: "UTF-16 byte order mark: only UTF-8 JSON is accepted")
        }
        if count >= 2, base[0] == 0 || base[1] == 0 {
            throw JSONParseError(
                offset: base[0] == 0 ? 0 : 1,
                reason: "NUL byte: the input looks like UTF-16 or UTF-32; only UTF-8 JSON is accepted")
        }
    }

    // MARK: Values

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < count else { throw JSONParseError(offset: index, reason: "unexpected end of input, expected a value") }
        switch base[index] {
        case UInt8(ascii: "{"): return .object(try parseObject(depth: depth + 1))
        case UInt8(ascii: "["): return .array(try parseArray(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw JSONParseError(offset: index, reason: "unexpected \(describe(index)), expected a value")
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONObject {
        try checkDepth(depth)
        index += 1  // {
        var members: [JSONObject.Member] = []
        members.reserveCapacity(16)
        var seen: Set<[UInt8]>? = nil
        skipWhitespace()
        if index < count, base[index] == UInt8(ascii: "}") {
            index += 1
            return JSONObject(members: members)
        }
        while true {
            skipWhitespace()
            guard index < count else { throw JSONParseError(offset: index, reason: "unexpected end of input inside an object") }
            guard base[index] == UInt8(ascii: "\"") else {
                throw JSONParseError(offset: index, reason: "unexpected \(describe(index)), expected a string key")
            }
            let keyOffset = index
            let key = try parseKey()
            if try isDuplicate(key, in: members, seen: &seen) {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(JSONWriter.escapedForMessage(key))\"")
            }
            skipWhitespace()
            guard index < count, base[index] == UInt8(ascii: ":") else {
                throw JSONParseError(
                    offset: index,
                    reason: index < count
                        ? "unexpected \(describe(index)), expected ':'" : "unexpected end of input, expected ':'")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(JSONObject.Member(key: key, value: value))
            skipWhitespace()
            guard index < count else { throw JSONParseError(offset: index, reason: "unexpected end of input inside an object") }
            switch base[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return JSONObject(members: members)
            default: throw JSONParseError(offset: index, reason: "unexpected \(describe(index)), expected ',' or '}'")
            }
        }
    }

    /// Whether an earlier member has the same key, byte for byte (UTF-8): one rule whatever the
    /// object's size. (Swift's `String ==` is Unicode canonical equivalence, under which "é" and
    /// "e\u{301}" are equal; the bytes are what other parsers compare.) Linear for the dozen keys of
    /// a postback; a set once an object grows large enough to make that quadratic.
    func isDuplicate(_ key: String, in members: [JSONObject.Member], seen: inout Set<[UInt8]>?) throws(JSONParseError)
        -> Bool
    {
        if members.count < 16 {
            // Lengths first (O(1) for native strings): most keys differ in length, and a full
            // comparison per earlier member was a tenth of the parse.
            let length = key.utf8.count
            for member in members where member.key.utf8.count == length && member.key.utf8.elementsEqual(key.utf8) {
                return true
            }
            return false
        }
        if seen == nil { seen = Set(members.map { Array($0.key.utf8) }) }
        return !seen!.insert(Array(key.utf8)).inserted
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> [JSONValue] {
        try checkDepth(depth)
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < count, base[index] == UInt8(ascii: "]") {
            index += 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < count else { throw JSONParseError(offset: index, reason: "unexpected end of input inside an array") }
            switch base[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return elements
            default: throw JSONParseError(offset: index, reason: "unexpected \(describe(index)), expected ',' or ']'")
            }
        }
    }

    func checkDepth(_ depth: Int) throws(JSONParseError) {
        if depth > maximumDepth {
            throw JSONParseError(offset: index, reason: "nesting deeper than \(maximumDepth) levels")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let length = literal.utf8CodeUnitCount
        let expected = literal.utf8Start
        guard index + length <= count else {
            throw JSONParseError(offset: index, reason: "unexpected end of input inside the literal '\(literal)'")
        }
        for offset in 0..<length where base[index + offset] != expected[offset] {
            throw JSONParseError(offset: index, reason: "invalid literal, expected '\(literal)'")
        }
        index += length
    }

    // MARK: Numbers

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, kept as text.
    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        var isInteger = true
        if base[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count, isDigit(base[index]) else {
            throw JSONParseError(offset: index, reason: "a digit must follow '-'")
        }
        if base[index] == UInt8(ascii: "0") {
            index += 1
            if index < count, isDigit(base[index]) {
                throw JSONParseError(offset: start, reason: "number with a leading zero")
            }
        } else {
            while index < count, isDigit(base[index]) { index += 1 }
        }
        if index < count, base[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < count, isDigit(base[index]) else {
                throw JSONParseError(offset: index, reason: "a digit must follow the decimal point")
            }
            while index < count, isDigit(base[index]) { index += 1 }
        }
        if index < count, base[index] == UInt8(ascii: "e") || base[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < count, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") { index += 1 }
            guard index < count, isDigit(base[index]) else {
                throw JSONParseError(offset: index, reason: "a digit must follow the exponent marker")
            }
            while index < count, isDigit(base[index]) { index += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: index - start), as: UTF8.self)
        return JSONNumber(text: text, isInteger: isInteger)
    }

    // MARK: Strings

    /// Parses an object key. The caller's keys (`InternedKeys`: a postback's repeat in every body) come
    /// from its table of shared strings instead of a fresh allocation each time.
    mutating func parseKey() throws(JSONParseError) -> String {
        let end = ByteScan.firstStringSpecial(base, from: index + 1, end: count)
        if end < count, base[end] == UInt8(ascii: "\""),
            let known = keys.lookup(UnsafeBufferPointer(start: base + index + 1, count: end - index - 1))
        {
            index = end + 1
            return known
        }
        return try parseString()
    }

    /// Parses a string starting at its opening quote. The fast path (no escapes) decodes straight from
    /// the input once the bytes are known to be valid UTF-8.
    mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // "
        let start = index
        while true {
            // Plain ASCII runs are skipped eight bytes at a time; only the byte that ends one needs a look.
            index = ByteScan.firstStringSpecial(base, from: index, end: count)
            guard index < count else { break }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: UnsafeBufferPointer(start: base + start, count: index - start), as: UTF8.self)
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
            if byte < 0x20 { throw controlCharacterError(byte) }
            index += try validUTF8SequenceLength(at: index)  // >= 0x80
        }
        throw JSONParseError(offset: start - 1, reason: "unterminated string")
    }

    mutating func parseEscapedString(from start: Int) throws(JSONParseError) -> String {
        var bytes = [UInt8](UnsafeBufferPointer(start: base + start, count: index - start))
        bytes.reserveCapacity(bytes.count + 32)
        while index < count {
            let byte = base[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: bytes, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try appendEscape(to: &bytes)
            case 0..<0x20:
                throw controlCharacterError(byte)
            case 0..<0x80:
                bytes.append(byte)
                index += 1
            default:
                let length = try validUTF8SequenceLength(at: index)
                bytes.append(contentsOf: UnsafeBufferPointer(start: base + index, count: length))
                index += length
            }
        }
        throw JSONParseError(offset: start - 1, reason: "unterminated string")
    }

    mutating func appendEscape(to bytes: inout [UInt8]) throws(JSONParseError) {
        let escapeOffset = index
        guard index + 1 < count else { throw JSONParseError(offset: index, reason: "unterminated escape sequence") }
        let escaped = base[index + 1]
        index += 2
        switch escaped {
        case UInt8(ascii: "\""): bytes.append(0x22)
        case UInt8(ascii: "\\"): bytes.append(0x5C)
        case UInt8(ascii: "/"): bytes.append(0x2F)
        case UInt8(ascii: "b"): bytes.append(0x08)
        case UInt8(ascii: "f"): bytes.append(0x0C)
        case UInt8(ascii: "n"): bytes.append(0x0A)
        case UInt8(ascii: "r"): bytes.append(0x0D)
        case UInt8(ascii: "t"): bytes.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try readHex4(at: escapeOffset)
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < count, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u") else {
                    throw JSONParseError(
                        offset: escapeOffset, reason: "lone high surrogate \\u\(hex4(scalar)) (no low surrogate follows)")
                }
                let lowOffset = index
                index += 2
                let low = try readHex4(at: lowOffset)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONParseError(
                        offset: lowOffset,
                        reason: "high surrogate \\u\(hex4(scalar)) followed by \\u\(hex4(low)), not a low surrogate")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw JSONParseError(offset: escapeOffset, reason: "lone low surrogate \\u\(hex4(scalar))")
            }
            appendUTF8(scalar, to: &bytes)
        default:
            throw JSONParseError(offset: escapeOffset, reason: "invalid escape sequence '\\\(printable(escaped))'")
        }
    }

    /// Reads the four hex digits after `\u` (index is just past the `u`).
    mutating func readHex4(at escapeOffset: Int) throws(JSONParseError) -> UInt32 {
        guard index + 4 <= count else { throw JSONParseError(offset: escapeOffset, reason: "truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = base[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw JSONParseError(offset: escapeOffset, reason: "invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence at `offset` (Unicode Table 3-7), or an error.
    func validUTF8SequenceLength(at offset: Int) throws(JSONParseError) -> Int {
        let lead = base[offset]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F  // U+D800..U+DFFF would be surrogates
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F  // nothing past U+10FFFF
        default:
            throw JSONParseError(offset: offset, reason: "invalid UTF-8: byte 0x\(hex2(lead)) cannot start a character")
        }
        guard offset + length <= count else {
            throw JSONParseError(offset: offset, reason: "invalid UTF-8: truncated \(length)-byte sequence")
        }
        guard secondRange.contains(base[offset + 1]) else {
            throw JSONParseError(
                offset: offset,
                reason: "invalid UTF-8: bad continuation byte 0x\(hex2(base[offset + 1])) (overlong, surrogate or out of range)")
        }
        for next in 2..<length where !(0x80...0xBF).contains(base[offset + next]) {
            throw JSONParseError(
                offset: offset + next, reason: "invalid UTF-8: bad continuation byte 0x\(hex2(base[offset + next]))")
        }
        return length
    }

    func controlCharacterError(_ byte: UInt8) -> JSONParseError {
        JSONParseError(offset: index, reason: "unescaped control character U+00\(hex2(byte)) in a string")
    }

    // MARK: Helpers

    mutating func skipWhitespace() {
        while index < count {
            switch base[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    func describe(_ offset: Int) -> String {
        let byte = base[offset]
        if byte >= 0x20 && byte < 0x7F { return "'\(printable(byte))'" }
        return "byte 0x\(hex2(byte))"
    }
}

private func appendUTF8(_ scalar: UInt32, to bytes: inout [UInt8]) {
    switch scalar {
    case 0..<0x80:
        bytes.append(UInt8(scalar))
    case 0x80..<0x800:
        bytes.append(UInt8(0xC0 | (scalar >> 6)))
        bytes.append(UInt8(0x80 | (scalar & 0x3F)))
    case 0x800..<0x10000:
        bytes.append(UInt8(0xE0 | (scalar >> 12)))
        bytes.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
        bytes.append(UInt8(0x80 | (scalar & 0x3F)))
    default:
        bytes.append(UInt8(0xF0 | (scalar >> 18)))
        bytes.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
        bytes.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
        bytes.append(UInt8(0x80 | (scalar & 0x3F)))
    }
}

private func printable(_ byte: UInt8) -> String { String(UnicodeScalar(byte)) }

func hex2(_ byte: UInt8) -> String { Hex.encode(CollectionOfOne(byte), uppercase: true) }

func hex4(_ value: UInt32) -> String { Hex.encode([UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)], uppercase: true) }
