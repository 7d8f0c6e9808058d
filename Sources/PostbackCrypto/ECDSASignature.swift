/// Conversions between the two ECDSA signature encodings postbacks use.
///
/// SKAdNetwork's `attribution-signature` is DER:
///
///     ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }
///
/// A JWS ES256 signature (AdAttributionKit) is raw `r ‖ s`, each left-padded to the coordinate size
/// (IEEE P1363, RFC 7518 §3.4). OpenSSL verifies DER, so raw signatures are converted first.
package enum ECDSASignature {
    /// DER from raw `r ‖ s`. Returns nil unless the input is exactly `2 × coordinateByteCount` bytes.
    ///
    /// The length check is the whole point: a converter that splits any input "in half" accepts
    /// truncated and over-long signatures (Wycheproof's `SignatureSize` cases).
    package static func derFromRaw(_ raw: [UInt8], curve: Curve) -> [UInt8]? {
        let half = curve.coordinateByteCount
        guard raw.count == 2 * half else { return nil }
        let r = derInteger(raw[0..<half])
        let s = derInteger(raw[half...])
        let body = r + s
        return [0x30] + derLength(body.count) + body
    }

    /// Raw `r ‖ s` from DER, for signing JWS in tests and benchmarks. Returns nil for malformed DER.
    package static func rawFromDER(_ der: [UInt8], curve: Curve) -> [UInt8]? {
        var reader = DERReader(der)
        guard let sequence = reader.read(tag: 0x30), reader.isAtEnd else { return nil }
        var inner = DERReader(sequence)
        guard let r = inner.read(tag: 0x02), let s = inner.read(tag: 0x02), inner.isAtEnd,
            let rawR = fixedWidth(r, curve.coordinateByteCount), let rawS = fixedWidth(s, curve.coordinateByteCount)
        else { return nil }
        return rawR + rawS
    }

    /// A minimal non-negative DER INTEGER for a big-endian unsigned value.
    private static func derInteger(_ magnitude: ArraySlice<UInt8>) -> [UInt8] {
        var value = Array(magnitude.drop { $0 == 0 })
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02] + derLength(value.count) + value
    }

    private static func derLength(_ count: Int) -> [UInt8] {
        count < 0x80 ? [UInt8(count)] : [0x81, UInt8(count)]
    }

    private static func fixedWidth(_ integer: ArraySlice<UInt8>, _ width: Int) -> [UInt8]? {
        let magnitude = Array(integer.drop { $0 == 0 })
        guard magnitude.count <= width else { return nil }
        return [UInt8](repeating: 0, count: width - magnitude.count) + magnitude
    }
}

/// Just enough DER to take apart a `SEQUENCE { INTEGER, INTEGER }` with short or one-byte lengths.
private struct DERReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: some Collection<UInt8>) { self.bytes = Array(bytes) }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func read(tag: UInt8) -> ArraySlice<UInt8>? {
        guard offset + 2 <= bytes.count, bytes[offset] == tag else { return nil }
        var length = Int(bytes[offset + 1])
        var headerLength = 2
        if length == 0x81 {
            guard offset + 3 <= bytes.count else { return nil }
            length = Int(bytes[offset + 2])
            headerLength = 3
        } else if length > 0x80 {
            return nil
        }
        let start = offset + headerLength
        guard start + length <= bytes.count else { return nil }
        offset = start + length
        return bytes[start..<start + length]
    }
}
