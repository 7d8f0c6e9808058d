/// Builds compact JSON output (the CLI's `--json` lines, store records, manifests).
///
/// Strings are escaped so that output is safe to print: besides what JSON requires, control and
/// invisible format characters (U+2063, U+202E, U+200B, …) become `\uXXXX`, so a hostile value cannot
/// hide itself or rewrite a terminal line.
package struct JSONWriter: Sendable {
    package private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = [false]

    package init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    package var string: String { String(decoding: bytes, as: UTF8.self) }

    package mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    package mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    package mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    package mutating func endArray() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes an object key; the next value call writes its value.
    package mutating func key(_ key: String) {
        separate()
        Self.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma[needsComma.count - 1] = false
    }

    package mutating func value(_ string: String?) {
        separate()
        if let string { Self.appendQuoted(string, to: &bytes) } else { appendNull() }
    }

    package mutating func value(_ number: Int64?) {
        separate()
        if let number { DecimalDigits.append(number, to: &bytes) } else { appendNull() }
    }

    package mutating func value(_ number: Int?) { value(number.map(Int64.init)) }

    package mutating func value(_ flag: Bool?) {
        separate()
        if let flag { bytes.append(contentsOf: (flag ? "true" : "false").utf8) } else { appendNull() }
    }

    /// A number written from its decimal text (e.g. a `Decimal` sum), unquoted.
    package mutating func value(numberText: String) {
        separate()
        bytes.append(contentsOf: numberText.utf8)
    }

    /// Already-encoded JSON, inserted verbatim.
    package mutating func value(rawJSON: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: rawJSON)
    }

    /// A string value given as UTF-8 bytes; nil if they are not valid UTF-8 (nothing is written then).
    /// Saves building a `String` from a large body only to escape it.
    package mutating func field(_ name: String, utf8 bytes: [UInt8]) -> Bool {
        // Postback bodies are ASCII; only other text needs the full check.
        guard bytes.withUnsafeBufferPointer(ByteScan.isASCII) || String(validating: bytes, as: UTF8.self) != nil else {
            return false
        }
        key(name)
        separate()
        self.bytes.append(UInt8(ascii: "\""))
        bytes.withUnsafeBufferPointer { Self.appendEscaped(utf8: $0, to: &self.bytes) }
        self.bytes.append(UInt8(ascii: "\""))
        return true
    }

    package mutating func field(_ name: String, _ string: String?) {
        key(name)
        value(string)
    }
    package mutating func field(_ name: String, _ number: Int64?) {
        key(name)
        value(number)
    }
    package mutating func field(_ name: String, _ number: Int?) {
        key(name)
        value(number)
    }
    package mutating func field(_ name: String, _ flag: Bool?) {
        key(name)
        value(flag)
    }

    /// Ends a line of JSON Lines output: a newline, after which the next value starts a new line.
    package mutating func endLine() {
        precondition(needsComma.count == 1, "endLine inside an unfinished object or array")
        bytes.append(0x0A)
        needsComma[0] = false
    }

    private mutating func appendNull() { bytes.append(contentsOf: "null".utf8) }

    private mutating func separate() {
        let last = needsComma.count - 1
        if needsComma[last] { bytes.append(UInt8(ascii: ",")) }
        needsComma[last] = true
    }

    /// Appends `"string"` with JSON escapes; see the type's comment for what else is escaped.
    package static func appendQuoted(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        appendEscaped(string, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    static func appendEscaped(_ string: String, to bytes: inout [UInt8]) {
        var string = string
        string.withUTF8 { appendEscaped(utf8: $0, to: &bytes) }
    }

    /// Appends valid UTF-8 with JSON escapes (the caller has checked it is valid UTF-8).
    static func appendEscaped(utf8: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        guard let base = utf8.baseAddress else { return }
        var index = 0
        // Runs of printable ASCII that need no escape are copied whole; the rest byte by byte. Only
        // a multi-byte character needs decoding, to decide whether it is invisible.
        while index < utf8.count {
            let end = ByteScan.firstToEscape(base, from: index, end: utf8.count)
            if end > index {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[index..<end]))
                index = end
                continue
            }
            let byte = utf8[index]
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x20..<0x7F:
                bytes.append(byte)
            case 0..<0x20, 0x7F:
                appendUnicodeEscape(UInt32(byte), to: &bytes)
            default:
                // Valid UTF-8: the lead byte gives the length.
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
                var value = UInt32(byte) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
                for offset in 1..<length { value = value << 6 | UInt32(utf8[index + offset] & 0x3F) }
                if let scalar = Unicode.Scalar(value), UnicodeSafety.isControlOrInvisible(scalar) {
                    appendUnicodeEscape(value, to: &bytes)
                } else {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[index..<index + length]))
                }
                index += length
                continue
            }
            index += 1
        }
    }

    private static func appendUnicodeEscape(_ value: UInt32, to bytes: inout [UInt8]) {
        if value > 0xFFFF {
            let offset = value - 0x10000
            appendUnicodeEscape(0xD800 + (offset >> 10), to: &bytes)
            appendUnicodeEscape(0xDC00 + (offset & 0x3FF), to: &bytes)
            return
        }
        bytes.append(contentsOf: "\\u\(hex4(value).lowercased())".utf8)
    }

    /// A value escaped for use inside an error message or a log line (without quotes).
    package static func escapedForMessage(_ string: String, limit: Int = 80) -> String {
        var bytes: [UInt8] = []
        let clipped =
            string.unicodeScalars.count > limit
            ? String(String.UnicodeScalarView(string.unicodeScalars.prefix(limit))) + "…" : string
        appendEscaped(clipped, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Which characters may never appear in a signed value, and are escaped whenever we print one.
package enum UnicodeSafety {
    /// Controls (Cc), invisible format characters (Cf: U+2063 INVISIBLE SEPARATOR, bidi overrides,
    /// zero-width spaces, the BOM), and the line/paragraph separators U+2028/U+2029.
    package static func isControlOrInvisible(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x20 || scalar.value == 0x7F { return true }
        if scalar.value < 0x80 { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// The first forbidden scalar in `string`, if any.
    package static func firstControlOrInvisible(in string: String) -> Unicode.Scalar? {
        var string = string
        if string.withUTF8(ByteScan.isPrintableASCII) { return nil }
        return string.unicodeScalars.first(where: isControlOrInvisible)
    }

    /// `U+2063 INVISIBLE SEPARATOR`, for messages.
    package static func describe(_ scalar: Unicode.Scalar) -> String {
        let code = "U+" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4)
        if let name = scalar.properties.name { return "\(code) \(name)" }
        return code
    }
}

extension String {
    package func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
