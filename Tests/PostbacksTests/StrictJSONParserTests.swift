import Testing
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
        let value = try StrictJSONParser.parse(Array(#"{"s":"a\/b\u2063\ud83d\ude00\n","n":525463029,"big":9007199254740993,"f":-1.5e3,"t":true,"z":null,"e":{},"l":[]}"#.utf8))
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object["s"] == .string("a/b\u{2063}😀\n"))
        #expect(object["n"] == .number(JSONNumber(text: "525463029", isInteger: true)))
        guard case .number(let big)? = object["big"] else { return }
        #expect(big.int64Value == 9007199254740993)
        guard case .number(let float)? = object["f"] else { return }
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
}

@Suite struct Base64Tests {
    @Test func roundTripsAllLengths() throws {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            for alphabet in [Base64.Alphabet.standard, .url] {
                #expect(try Base64.decode(Base64.encode(bytes, alphabet: alphabet), alphabet: alphabet) == bytes)
            }
        }
        #expect(Base64.encode(Array("foob".utf8), alphabet: .standard) == "Zm9vYg==")
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
        #expect { try Base64.decode(text, alphabet: alphabet) } throws: { ($0 as? Base64.DecodingError)?.reason.contains(reason) == true }
    }
}
