import Foundation
import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

@Suite struct StrictJSONParserTests {
    static func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }

    static let invalidInputs: [([UInt8], String)] = [
        ([0xEF, 0xBB, 0xBF] + utf8(#"{"a":1}"#), "byte order mark"),
        ([0xFF, 0xFE, 0x7B, 0x00], "UTF-16 byte order mark"),
        ([0x7B, 0x00, 0x22, 0x00], "looks like UTF-16 or UTF-32"),
        (utf8(#"{"a":1,"a":2}"#), "duplicate key \"a\""),
        (utf8(#"{"o":{"b":1,"b":1}}"#), "duplicate key \"b\""),
        (utf8(#"{"a":"\ud800"}"#), "lone high surrogate"),
        (utf8(#"{"a":"\udc00"}"#), "lone low surrogate"),
        (utf8(#"{"a":"\ud800\u0041"}"#), "not a low surrogate"),
        (utf8(#"{"a":"x"#) + [0xC0, 0xAF] + utf8(#""}"#), "invalid UTF-8"),  // overlong '/'
        (utf8(#"{"a":""#) + [0xED, 0xA0, 0x80] + utf8(#""}"#), "invalid UTF-8"),  // encoded surrogate
        (utf8(#"{"a":""#) + [0xF4, 0x90, 0x80, 0x80] + utf8(#""}"#), "invalid UTF-8"),  // > U+10FFFF
        (utf8(#"{"a":""#) + [0xE2, 0x81] + utf8(#""}"#), "invalid UTF-8"),  // truncated
        (utf8(#"{"a":""#) + [0xFF] + utf8(#""}"#), "invalid UTF-8"),
        (utf8(#"{"a":""#) + [0x01] + utf8(#""}"#), "unescaped control character U+0001"),
        (utf8("{\"a\":\"line\nbreak\"}"), "unescaped control character U+000A"),
        (utf8(#"{"a":01}"#), "leading zero"),
        (utf8(#"{"a":1.}"#), "follow the decimal point"),
        (utf8(#"{"a":-}"#), "must follow '-'"),
        (utf8(#"{"a":1e}"#), "exponent"),
        (utf8(#"{"a":tru}"#), "literal"),
        (utf8(#"{"a":1,}"#), "expected a string key"),
        (utf8(#"{"a":1} x"#), "after the end of the JSON value"),
        (utf8(#"{'a':1}"#), "expected a string key"),
        (utf8(#"{"a":"\x"}"#), "invalid escape"),
        (utf8(#"{"a":1"#), "unexpected end of input"),
        (utf8("   "), "empty input"),
        (utf8(#"{"a":NaN}"#), "expected a value"),
    ]

    @Test(arguments: invalidInputs)
    func rejects(input: [UInt8], reason: String) {
        #expect {
            _ = try StrictJSONParser.parse(input)
        } throws: { error in
            guard let error = error as? JSONParseError else { return false }
            return error.reason.contains(reason)
        }
    }

    @Test func rejectsDeepNestingWithoutRecursingFar() {
        let deep = Array(String(repeating: "[", count: 100_000).utf8)
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(deep) }
        let nine = Array(("{\"a\":" + String(repeating: "[", count: 8) + String(repeating: "]", count: 8) + "}").utf8)
        #expect { try StrictJSONParser.parse(nine) } throws: { ($0 as? JSONParseError)?.reason.contains("deeper than 8") == true }
        let eight = Array(("{\"a\":" + String(repeating: "[", count: 7) + String(repeating: "]", count: 7) + "}").utf8)
        #expect(throws: Never.self) { try StrictJSONParser.parse(eight) }
    }

    @Test func decodesEscapesAndKeepsNumberText() throws {
        let value = try StrictJSONParser.parse(
            Array(
                #"{"s":"a\/b\u2063\ud83d\ude00\n","n":525463029,"big":9007199254740993,"f":-1.5e3,"t":true,"z":null,"e":{},"l":[]}"#
                    .utf8))
        guard case .object(let object) = value else {
            Issue.record("not an object")
            return
        }
        #expect(object["s"] == .string("a/b\u{2063}😀\n"))
        #expect(object["n"] == .number(JSONNumber(text: "525463029", isInteger: true)))
        let big = try #require(object["big"]?.number)
        #expect(big.int64Value == 9_007_199_254_740_993)
        let float = try #require(object["f"]?.number)
        #expect(!float.isInteger && float.int64Value == nil && float.text == "-1.5e3")
        #expect(object["t"] == .bool(true))
        #expect(object["z"] == .null)
        #expect(object.keys == ["s", "n", "big", "f", "t", "z", "e", "l"])
    }

    @Test func duplicateDetectionWorksPastTheLinearScanThreshold() {
        let keys = (0..<40).map { "\"k\($0)\":\($0)" } + ["\"k3\":0"]
        #expect { try StrictJSONParser.parse(Array(("{" + keys.joined(separator: ",") + "}").utf8)) } throws: {
            ($0 as? JSONParseError)?.reason.contains("duplicate key \"k3\"") == true
        }
    }

    /// One rule at every size: keys are the same only byte for byte. "é" (U+00E9) and "e" + U+0301
    /// are canonically equivalent (Swift's String ==) but different keys, in a 12-member object (the
    /// linear scan) and in a 22-member one (the set); the same bytes twice are a duplicate in both.
    @Test(arguments: [12, 22]) func duplicateKeysAreComparedByBytesAtEverySize(members: Int) throws {
        let filler = (0..<(members - 2)).map { "\"k\($0)\":\($0)" }
        let equivalent = "{" + (filler + ["\"\u{E9}\":1", "\"e\u{301}\":2"]).joined(separator: ",") + "}"
        guard case .object(let object) = try StrictJSONParser.parse(Array(equivalent.utf8)) else {
            Issue.record("not an object")
            return
        }
        #expect(object.members.count == members)
        let same = "{" + (filler + ["\"\u{E9}\":1", "\"\u{E9}\":2"]).joined(separator: ",") + "}"
        #expect { try StrictJSONParser.parse(Array(same.utf8)) } throws: {
            ($0 as? JSONParseError)?.reason.contains("duplicate key") == true
        }
    }

    @Test func reportsTheByteOffset() {
        #expect { try StrictJSONParser.parse(Array(#"{"a": 1, "a": 2}"#.utf8)) } throws: { ($0 as? JSONParseError)?.offset == 9 }
    }
}

@Suite struct JSONWriterTests {
    @Test func escapesControlAndInvisibleCharacters() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("s", "a\"b\\c\n\u{2063}\u{202E}\u{7}é😀")
        writer.field("n", Int64(42))
        writer.field("b", false)
        writer.field("x", nil as String?)
        writer.endObject()
        #expect(writer.string == #"{"s":"a\"b\\c\n\u2063\u202e\u0007é😀","n":42,"b":false,"x":null}"#)
        // And it parses back to the same value.
        #expect(throws: Never.self) { try StrictJSONParser.parse(writer.bytes) }
    }

    @Test func bodyFieldTakesOnlyValidUTF8() {
        func written(_ body: [UInt8]) -> Bool {
            var writer = JSONWriter()
            writer.beginObject()
            return writer.field("body", utf8: body)
        }
        let ascii = Array(#"{"version":"4.0","a":"\"quoted\""}"#.utf8)
        #expect(written([]))
        #expect(written(ascii))
        // A non-ASCII byte at every position of the 8-byte scan and its tail.
        for position in 0..<ascii.count {
            var valid = ascii
            valid.replaceSubrange(position..<position + 1, with: Array("é".utf8))
            #expect(written(valid), "é at \(position)")
            var invalid = ascii
            invalid[position] = 0xC3
            #expect(!written(invalid), "lone 0xC3 at \(position)")
        }
    }
}

extension JSONWriterTests {
    /// The escaping rules, one scalar at a time: the plain statement of what the fast byte loop does.
    static func referenceEscaped(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            default:
                if UnicodeSafety.isControlOrInvisible(scalar) {
                    let units =
                        scalar.value > 0xFFFF
                        ? [0xD800 + ((scalar.value - 0x10000) >> 10), 0xDC00 + ((scalar.value - 0x10000) & 0x3FF)]
                        : [scalar.value]
                    for unit in units {
                        let hex = String(unit, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    @Test func escapingMatchesTheScalarByScalarRules() throws {
        var random = SplitMix64(seed: 99)
        let pool: [UInt32] = [
            0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x00, 0x1F, 0x7F, 0x41, 0x7B, 0xE9, 0xAD, 0x2028, 0x2063, 0x202E, 0xFEFF, 0x1F600,
            0xE0001, 0x4E2D,
        ]
        var cases = [
            #"{"version":"4.0","a":"\"quoted\""}"#, "", "plain ascii", "\"", "\\", #"ends with a quote""#,
            #""starts with a quote then é"#,
            String(repeating: #"a\"b"#, count: 30) + "\u{2063}" + String(repeating: "x\"", count: 9),
        ]
        for _ in 0..<2000 {
            // Up to 40 scalars: runs longer than the 8-byte scan between quotes and other escapes.
            let length = Int(random.next() % 40)
            cases.append(
                String(
                    String.UnicodeScalarView(
                        (0..<length).map { _ in Unicode.Scalar(pool[Int(random.next() % UInt64(pool.count))])! })))
        }
        for text in cases {
            var bytes: [UInt8] = []
            JSONWriter.appendQuoted(text, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == Self.referenceEscaped(text), "\(text.debugDescription)")
            // And the parser reads back the original.
            #expect(try StrictJSONParser.parse(bytes) == .string(text))
        }
    }
}

@Suite struct Base64Tests {
    @Test func roundTripsAllLengths() throws {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            for alphabet in [Base64.Alphabet.standard, .url] {
                #expect(Base64.decode(Base64.encode(bytes, alphabet: alphabet), alphabet: alphabet) == .bytes(bytes))
            }
        }
        #expect(Base64.encode(Array("foob".utf8), alphabet: .standard) == "Zm9vYg==")
        // RFC 4648 §10's vectors, and Foundation's encoder on every length up to 100 (a slice too).
        for (text, encoded) in [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
        ] {
            #expect(Base64.encode(Array(text.utf8), alphabet: .standard) == encoded)
        }
        for count in 0...100 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
            #expect(Base64.encode(bytes, alphabet: .standard) == Data(bytes).base64EncodedString())
            #expect(Base64.encode(bytes[...], alphabet: .standard) == Data(bytes).base64EncodedString())
            #expect(
                Base64.encode(bytes.lazy.map { $0 }, alphabet: .url)
                    == Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""))
        }
        #expect(Base64.encode(Array("foob".utf8), alphabet: .url) == "Zm9vYg")
    }

    @Test(arguments: [
        ("Zm9vYg=", Base64.Alphabet.standard, "multiple of 4"),
        ("Zm9vYg", .standard, "multiple of 4"),
        ("Zm9vYh==", .standard, "non-canonical"),
        ("Zm9v===", .standard, "multiple of 4"),
        ("Zm9vY===", .standard, "not in the Base64 alphabet"),
        ("Zm9v Yg==", .standard, "multiple of 4"),
        ("Zm9-Yg==", .standard, "not in the Base64 alphabet"),
        ("Zm9vYg==", .url, "not in the base64url alphabet"),
        ("Zm9vYh", .url, "non-canonical"),
        ("Zm9+Yg", .url, "not in the base64url alphabet"),
        ("Z", .url, "one character left over"),
    ])
    func rejectsNonCanonical(text: String, alphabet: Base64.Alphabet, reason: String) {
        guard case .invalid(let found) = Base64.decode(text, alphabet: alphabet) else {
            Issue.record("\(text) decoded")
            return
        }
        #expect(found.contains(reason), "\(found)")
    }
}

/// A body that is not JSON keeps the parser's error as a field (`explain` puts its caret at
/// `jsonError.offset`), and the parser shares the strings of the keys its caller declares.
@Suite struct PostbackJSONErrorTests {
    /// Offsets found in the input itself, not by the parser: the second comma, the bad literal, the
    /// byte after the value.
    static let notJSON: [(body: [UInt8], offset: Int)] = {
        let commas = Array(#"{"version": "4.0", "app-id": 1,, }"#.utf8)
        let literal = Array(#"{"did-win": tru}"#.utf8)
        let trailing = Array(#"{"version":"4.0"} x"#.utf8)
        return [
            (commas, commas.firstRange(of: Array(",,".utf8))!.lowerBound + 1),
            (literal, literal.firstIndex(of: UInt8(ascii: "t"))!),
            (trailing, trailing.firstIndex(of: UInt8(ascii: "x"))!),
            // After a byte-order mark (skipped and flagged), the offset counts from the JSON.
            ([0xEF, 0xBB, 0xBF] + commas, commas.firstRange(of: Array(",,".utf8))!.lowerBound + 1),
        ]
    }()

    @Test func aBodyThatIsNotJSONKeepsTheParsersOffset() throws {
        for (body, offset) in Self.notJSON {
            let rejection = try #require(throws: PostbackRejection.self) { try Postback(body: body) }
            #expect(rejection.status == .malformed)
            #expect(rejection.jsonError?.offset == offset, "\(String(decoding: body, as: UTF8.self))")
        }
        // JSON that is not a postback is malformed for another reason: no parser error to point at.
        let array = try #require(throws: PostbackRejection.self) { try Postback(body: Array("[1,2]".utf8)) }
        #expect(array.status == .malformed)
        #expect(array.jsonError == nil)
    }

    /// Every member of Apple's example bodies and of their JWS parts is a declared key, and a parse
    /// with the keys gives the same value as one without.
    @Test func everyAppleKeyIsInternedAndInterningChangesNoValue() throws {
        let declared = Set(Postback.internedKeys.keys)
        #expect(InternedKeys.none.keys.isEmpty)
        for name in try Fixtures.appleVectorNames() {
            let body = try Fixtures.appleVector(name)
            let plain = try StrictJSONParser.parse(body)
            #expect(try StrictJSONParser.parse(body, keys: Postback.internedKeys) == plain, "\(name)")
            guard case .object(let object) = plain else {
                Issue.record("\(name) is not an object")
                continue
            }
            var objects = [object]
            if case .string(let jws)? = object["jws-string"] {
                for part in jws.split(separator: ".").prefix(2) {
                    let json = try #require(Base64.decode(String(part), alphabet: .url).value)
                    if case .object(let inner) = try StrictJSONParser.parse(json) { objects.append(inner) }
                }
                #expect(objects.count == 3, "\(name): header and payload")
            }
            for key in objects.flatMap(\.keys) where !name.hasPrefix("negative_") {
                #expect(declared.contains(key), "\(name): \(key)")
            }
        }
    }
}

@Suite struct DecimalDigitsTests {
    @Test func writesWhatStringWrites() {
        for value: Int64 in [0, 1, 9, 10, 99, 100, 1_594_406_341_000, -1, -10, .max, .min] {
            var bytes: [UInt8] = [0x41]
            DecimalDigits.append(value, to: &bytes)
            #expect(bytes == [0x41] + Array(String(value).utf8))
        }
    }
}
