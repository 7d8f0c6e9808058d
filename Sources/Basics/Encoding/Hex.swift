/// Hexadecimal text of bytes, two digits a byte: digests, keys and signatures in messages, UUIDs,
/// bytes named in parse errors.
package enum Hex {
    private static let lowercaseDigits = Array("0123456789abcdef".utf8)
    private static let uppercaseDigits = Array("0123456789ABCDEF".utf8)

    package static func encode(_ bytes: some Collection<UInt8>, uppercase: Bool = false) -> String {
        let digits = uppercase ? uppercaseDigits : lowercaseDigits
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
