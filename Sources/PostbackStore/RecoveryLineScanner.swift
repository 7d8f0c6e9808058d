import Postbacks

#if canImport(Glibc)
import Glibc
#endif

/// Recovery's fast path: reads one spool line for what start-up needs (is it a record, its status,
/// its dedup key) in a single pass over the bytes, without building a JSON tree, the body string or
/// an `Attribution`. Full parsing costs 13–17 µs a record, 7–13 s before a store of a million
/// records can serve; this takes a fraction of that.
///
/// Exactness: `SpoolRecord(line:)` defines a valid line. This scanner answers only for lines it can
/// prove that parser accepts, and returns nil for everything else, which the caller then hands to
/// the full parser. So it accepts only the narrow shape `SpoolRecord.encoded()` writes: no
/// whitespace, known keys each at most once, plain ASCII in every string but the body (no escapes,
/// which leaves nothing to decode), an `attribution` object of scalars whose types and values pass
/// `Attribution(json:)`, integers of at most 18 digits, and a `body` string of ASCII with valid
/// escapes. A key it does not know, `body_base64`, a non-ASCII byte, a `\u` surrogate, a leading
/// zero, an exponent: nil, never a guess. Tests hold it to the full parser on generated and
/// mutated lines.
struct RecoveryLineScanner {
    /// What the full parser would have said about a line it accepts.
    struct Verdict: Equatable {
        let status: VerificationStatus
        let dedupKey: String?
    }

    private let base: UnsafePointer<UInt8>
    private let end: Int
    private var index = 0

    private init(base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.end = count
    }

    /// The verdict on `line` (without its newline), or nil to leave the line to `SpoolRecord(line:)`.
    static func scan(_ line: [UInt8]) -> Verdict? {
        line.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, buffer.count > 2 else { return nil }
            var scanner = RecoveryLineScanner(base: base, count: buffer.count)
            return scanner.record()
        }
    }

    // MARK: The record

    private static let recordKeys: [[UInt8]] = [
        "received_at", "writer", "route", "status", "environment", "dedup_key", "protocol", "version", "key", "reason",
        "attribution", "body",
    ].map { Array($0.utf8) }

    private mutating func record() -> Verdict? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var seen = 0
        var status: VerificationStatus?
        var dedupKey: String?
        var expected = 0
        while true {
            guard let key = key(in: Self.recordKeys, expected: expected), seen & (1 << key) == 0 else { return nil }
            seen |= 1 << key
            expected = key + 1
            switch key {
            case 0:  // received_at
                guard let text = plainString(), UTCTimestamp(iso8601: text) != nil else { return nil }
            case 3:  // status
                guard let text = plainString(), let value = VerificationStatus(rawValue: text) else { return nil }
                status = value
            case 5:  // dedup_key
                if !takeNull() {
                    guard let text = plainString() else { return nil }
                    dedupKey = text
                }
            case 10:  // attribution: null is ignored by the full parser, an object must decode
                if !takeNull() { guard attribution() else { return nil } }
            case 11:  // body
                guard bodyString() else { return nil }
            default:  // writer, route, environment, protocol, version, key, reason: read leniently there
                if !takeNull() { guard skipPlainString() else { return nil } }
            }
            guard index < end else { return nil }
            if base[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard base[index] == UInt8(ascii: "}"), index + 1 == end else { return nil }
            let required = 1 << 0 | 1 << 3 | 1 << 11
            guard seen & required == required, let status else { return nil }
            return Verdict(status: status, dedupKey: dedupKey)
        }
    }

    // MARK: The attribution object (what `Attribution(json:)` reads)

    private enum AttributionType { case string, requiredString, integer, requiredInteger, bool, choice, requiredChoice }

    private static let attributionKeys: [(name: [UInt8], type: AttributionType)] = ([
        ("protocol", .requiredChoice), ("version", .string), ("app_id", .requiredInteger), ("ad_network_id", .requiredString),
        ("campaign_id", .integer), ("source_identifier", .string), ("source_app_id", .integer), ("source_domain", .string),
        ("marketplace_id", .string), ("country_code", .string), ("interaction", .choice), ("conversion_type", .requiredChoice),
        ("postback_sequence_index", .integer), ("did_win", .bool), ("fine_value", .integer), ("coarse_value", .choice),
        ("test_mode", .bool),
    ] as [(String, AttributionType)]).map { (Array($0.0.utf8), $0.1) }

    private static let attributionNames = attributionKeys.map(\.name)
    private static let requiredAttribution = attributionKeys.indices.reduce(0) { mask, position in
        switch attributionKeys[position].type {
        case .requiredString, .requiredInteger, .requiredChoice: return mask | 1 << position
        default: return mask
        }
    }

    private mutating func attribution() -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        var present = 0
        var seen = 0
        var expected = 0
        while true {
            guard let key = key(in: Self.attributionNames, expected: expected), seen & (1 << key) == 0 else { return false }
            seen |= 1 << key
            expected = key + 1
            let type = Self.attributionKeys[key].type
            if takeNull() {
                // A null required member fails `Attribution(json:)`: let the full parser say so.
                if Self.requiredAttribution & (1 << key) != 0 { return false }
            } else {
                switch type {
                case .string, .requiredString:
                    guard skipPlainString() else { return false }
                case .integer, .requiredInteger:
                    guard skipSmallInteger() else { return false }
                case .bool:
                    guard takeLiteral("true") || takeLiteral("false") else { return false }
                case .choice, .requiredChoice:
                    guard let text = plainString(), Self.isKnownChoice(text, key: key) else { return false }
                }
                present |= 1 << key
            }
            guard index < end else { return false }
            if base[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard base[index] == UInt8(ascii: "}") else { return false }
            index += 1
            return present & Self.requiredAttribution == Self.requiredAttribution
        }
    }

    /// The enum raw values come from the enums themselves, so this cannot drift from `Attribution(json:)`.
    private static func isKnownChoice(_ text: String, key: Int) -> Bool {
        switch key {
        case 0: return PostbackProtocol(rawValue: text) != nil
        case 10: return AdInteraction(rawValue: text) != nil
        case 11: return ConversionType(rawValue: text) != nil
        case 15: return CoarseConversionValue(rawValue: text) != nil
        default: return false
        }
    }

    // MARK: Tokens

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < end, base[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func takeLiteral(_ literal: StaticString) -> Bool {
        let length = literal.utf8CodeUnitCount
        guard index + length <= end, memcmp(base + index, literal.utf8Start, length) == 0 else { return false }
        index += length
        return true
    }

    private mutating func takeNull() -> Bool { takeLiteral("null") }

    /// `"name":` where name is one of `names`; returns its position. `expected` (the position after
    /// the previous key: the encoder's order) is tried first, so a line as written costs one compare a key.
    private mutating func key(in names: [[UInt8]], expected: Int) -> Int? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < end, base[index] != UInt8(ascii: "\"") {
            guard base[index] >= 0x20, base[index] < 0x80, base[index] != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        guard index < end else { return nil }
        let length = index - start
        index += 1
        guard take(UInt8(ascii: ":")) else { return nil }
        if expected < names.count, names[expected].count == length,
           names[expected].withUnsafeBufferPointer({ memcmp($0.baseAddress!, base + start, length) }) == 0 {
            return expected
        }
        for (position, name) in names.enumerated() where name.count == length {
            if name.withUnsafeBufferPointer({ memcmp($0.baseAddress!, base + start, length) }) == 0 { return position }
        }
        return nil
    }

    /// A string of printable ASCII without escapes: its text is exactly its bytes.
    private mutating func plainStringRange() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < end {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return start..<(index - 1)
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    private mutating func plainString() -> String? {
        guard let range = plainStringRange() else { return nil }
        return String(decoding: UnsafeBufferPointer(start: base + range.lowerBound, count: range.count), as: UTF8.self)
    }

    private mutating func skipPlainString() -> Bool { plainStringRange() != nil }

    /// `0` or `[1-9][0-9]{0,17}`: always a JSON integer that fits Int64. A sign, fraction or exponent: nil.
    private mutating func skipSmallInteger() -> Bool {
        let start = index
        while index < end, base[index] >= UInt8(ascii: "0"), base[index] <= UInt8(ascii: "9") { index += 1 }
        let digits = index - start
        guard digits >= 1, digits <= 18, digits == 1 || base[start] != UInt8(ascii: "0") else { return false }
        // The number must end here; `.5` or `e3` would make it a non-integer (or a different one).
        guard index < end, base[index] == UInt8(ascii: ",") || base[index] == UInt8(ascii: "}") else { return false }
        return true
    }

    /// The body: any JSON string of ASCII whose escapes the full parser decodes without error.
    private mutating func bodyString() -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
        while index < end {
            skipPlainBodyBytes()
            guard index < end else { return false }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return true
            }
            if byte == UInt8(ascii: "\\") {
                guard index + 1 < end else { return false }
                switch base[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    // A BMP scalar outside the surrogates always decodes; surrogate pairs go to the full parser.
                    guard index + 6 <= end, let scalar = hex4(at: index + 2), !(0xD800...0xDFFF).contains(scalar) else { return false }
                    index += 6
                default:
                    return false
                }
                continue
            }
            guard byte >= 0x20, byte < 0x80 else { return false }
            index += 1
        }
        return false
    }

    /// Skips bytes that need no attention (printable ASCII other than `"` and `\\`), eight at a time:
    /// a base64 JWS is a long run of them.
    private mutating func skipPlainBodyBytes() {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while index + 8 <= end {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            // The classic has-zero-byte / has-less-than tests: never a miss, and a false alarm only
            // sends this word to the byte-by-byte path.
            let control = (word &- ones &* 0x20) & ~word
            let quotes = word ^ (ones &* 0x22)
            let backslashes = word ^ (ones &* 0x5C)
            let quote = (quotes &- ones) & ~quotes
            let backslash = (backslashes &- ones) & ~backslashes
            if (control | quote | backslash | word) & highs != 0 { return }
            index += 8
        }
    }

    private func hex4(at offset: Int) -> UInt32? {
        var value: UInt32 = 0
        for position in offset..<(offset + 4) {
            let byte = base[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
