/// Strict Base64 (RFC 4648), because signature text is attacker input.
///
/// Foundation's `Data(base64Encoded:)` on Linux decodes `…xo=` and `…xp=` to the same bytes and takes
/// extra padding; a lax decoder turns one signature into many accepted spellings. These decoders
/// accept only the canonical encoding: the right alphabet, exact padding (standard) or none (url),
/// and zero bits in the unused tail.
package enum Base64 {
    package enum Alphabet: Sendable {
        /// RFC 4648 §4, `+` and `/`, padded with `=`: SKAdNetwork's `attribution-signature`.
        case standard
        /// RFC 4648 §5, `-` and `_`, unpadded: JWS segments (RFC 7515 §2).
        case url
    }

    /// What decoding found: the bytes, or why the text is not canonical Base64. Text that does not
    /// decode is attacker input judged, an expected outcome (as a signature that does not verify is),
    /// not a fault of the program; callers name the member in the verdict they give.
    package enum Decoded: Sendable, Equatable {
        case bytes([UInt8])
        /// Why not, e.g. "wrong amount of '=' padding".
        case invalid(reason: String)

        /// The bytes, nil when the text is not canonical Base64.
        package var value: [UInt8]? {
            if case .bytes(let bytes) = self { return bytes }
            return nil
        }
    }

    package static func decode(_ text: String, alphabet: Alphabet) -> Decoded {
        var text = text
        return text.withUTF8 { utf8 in decode(utf8: UnsafeRawBufferPointer(utf8), alphabet: alphabet) }
    }

    package static func decode(_ utf8: [UInt8], alphabet: Alphabet) -> Decoded {
        utf8.withUnsafeBytes { bytes in decode(utf8: bytes, alphabet: alphabet) }
    }

    package static func decode(utf8 input: UnsafeRawBufferPointer, alphabet: Alphabet) -> Decoded {
        var length = input.count
        var padding = 0
        if alphabet == .standard {
            guard length % 4 == 0 else {
                return .invalid(reason: "length \(length) is not a multiple of 4 (standard Base64 is padded)")
            }
            while padding < 2, length > 0, input[length - 1] == UInt8(ascii: "=") {
                length -= 1
                padding += 1
            }
        }
        let remainder = length % 4
        if remainder == 1 { return .invalid(reason: "length \(length) cannot be Base64 (one character left over)") }
        if alphabet == .standard, padding != (4 - remainder) % 4 {
            return .invalid(reason: "wrong amount of '=' padding")
        }

        var output = [UInt8](repeating: 0, count: length * 3 / 4)
        let table = alphabet == .url ? urlDecodingTable : standardDecodingTable
        var badPosition: Int?
        var unusedBitsSet = false
        table.withUnsafeBufferPointer { table in
            output.withUnsafeMutableBufferPointer { out in
                // Whole groups of four characters, three bytes each; a sextet of 0xFF (not in the
                // alphabet) is seen through the OR of the group's four values.
                var position = 0
                var written = 0
                while position + 4 <= length {
                    let a = table[Int(input[position])]
                    let b = table[Int(input[position + 1])]
                    let c = table[Int(input[position + 2])]
                    let d = table[Int(input[position + 3])]
                    guard (a | b | c | d) < 64 else {
                        badPosition = (position..<position + 4).first { table[Int(input[$0])] >= 64 }
                        return
                    }
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[written] = UInt8(truncatingIfNeeded: group >> 16)
                    out[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    out[written + 2] = UInt8(truncatingIfNeeded: group)
                    written += 3
                    position += 4
                }
                // A last group of two or three characters: one or two bytes, and 4 or 2 unused bits.
                guard remainder > 0 else { return }
                var group: UInt32 = 0
                for offset in 0..<remainder {
                    let sextet = table[Int(input[position + offset])]
                    guard sextet < 64 else {
                        badPosition = position + offset
                        return
                    }
                    group = group << 6 | UInt32(sextet)
                }
                let unusedBits = remainder == 2 ? 4 : 2
                // A canonical encoder leaves the unused bits of the last character zero.
                unusedBitsSet = group & ((1 << UInt32(unusedBits)) - 1) != 0
                group >>= UInt32(unusedBits)
                if remainder == 3 {
                    out[written] = UInt8(truncatingIfNeeded: group >> 8)
                    out[written + 1] = UInt8(truncatingIfNeeded: group)
                } else {
                    out[written] = UInt8(truncatingIfNeeded: group)
                }
            }
        }
        if let badPosition {
            return .invalid(
                reason:
                    "character \(describe(input[badPosition])) at position \(badPosition) is not in the \(alphabet == .url ? "base64url" : "Base64") alphabet"
            )
        }
        if unusedBitsSet {
            return .invalid(reason: "non-canonical encoding: the unused bits of the last character are not zero")
        }
        return .bytes(output)
    }

    package static func encode(_ bytes: some Collection<UInt8>, alphabet: Alphabet) -> String {
        if let encoded = bytes.withContiguousStorageIfAvailable({ encode(UnsafeRawBufferPointer($0), alphabet: alphabet) }) {
            return encoded
        }
        return Array(bytes).withUnsafeBytes { encode($0, alphabet: alphabet) }
    }

    /// Written straight into the string's storage: impressions are signed and encoded by the thousand.
    private static func encode(_ input: UnsafeRawBufferPointer, alphabet: Alphabet) -> String {
        let full = input.count / 3
        let rest = input.count - full * 3
        let length = full * 4 + (rest == 0 ? 0 : alphabet == .standard ? 4 : rest + 1)
        guard length > 0 else { return "" }
        // The alphabet built once, not per call.
        let table = alphabet == .url ? urlEncodingTable : standardEncodingTable
        return table.withUnsafeBufferPointer { table in
            String(unsafeUninitializedCapacity: length) { output in
                var written = 0
                var index = 0
                for _ in 0..<full {
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    output[written] = table[Int(chunk >> 18 & 0x3F)]
                    output[written + 1] = table[Int(chunk >> 12 & 0x3F)]
                    output[written + 2] = table[Int(chunk >> 6 & 0x3F)]
                    output[written + 3] = table[Int(chunk & 0x3F)]
                    index += 3
                    written += 4
                }
                if rest > 0 {
                    let chunk = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
                    output[written] = table[Int(chunk >> 18 & 0x3F)]
                    output[written + 1] = table[Int(chunk >> 12 & 0x3F)]
                    written += 2
                    if rest == 2 {
                        output[written] = table[Int(chunk >> 6 & 0x3F)]
                        written += 1
                    }
                    if alphabet == .standard {
                        while written < length {
                            output[written] = UInt8(ascii: "=")
                            written += 1
                        }
                    }
                }
                return written
            }
        }
    }

    private static let standardEncodingTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlEncodingTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Sextet value of each byte, 0xFF for bytes outside the alphabet.
    private static let standardDecodingTable: [UInt8] = decodingTable(extra: "+/")
    private static let urlDecodingTable: [UInt8] = decodingTable(extra: "-_")

    private static func decodingTable(extra: String) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8) + Array(extra.utf8)
        for (value, character) in characters.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }

    private static func describe(_ character: UInt8) -> String {
        character >= 0x21 && character < 0x7F ? "'\(String(UnicodeScalar(character)))'" : "0x\(hex2(character))"
    }
}
