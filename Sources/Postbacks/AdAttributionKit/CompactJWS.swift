package import Basics

/// A compact JWS (RFC 7515 §7.1) as AdAttributionKit sends it in `jws-string`:
///
///     BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(signature)
///
/// Parsing is strict: exactly three non-empty segments of canonical unpadded base64url, header and
/// payload strict JSON objects. The signing input is the first two segments *as received*: Apple's
/// genuine header escapes the slash in its `kid` (`apple-development-identifier\/1`), so re-encoding
/// the JSON would change the bytes.
package struct CompactJWS: Sendable, Equatable {
    /// The ASCII bytes of `header "." payload`, which the signature covers.
    package let signingInput: [UInt8]
    package let header: JSONObject
    package let payload: JSONObject
    /// The decoded third segment; 64 bytes (raw r ‖ s) for a well-formed ES256 signature.
    package let signature: [UInt8]
    /// The decoded header and payload JSON text, for `explain`.
    package let headerJSON: String
    package let payloadJSON: String

    package init(parsing text: String) throws(PostbackRejection) {
        var text = text
        var parts: Result<(decoded: [[UInt8]], signingInput: [UInt8]), PostbackRejection> = .failure(.malformed("empty"))
        text.withUTF8 { utf8 in
            parts = Result { () throws(PostbackRejection) in try Self.split(UnsafeRawBufferPointer(utf8)) }
        }
        let (decoded, signingInput) = try parts.get()
        header = try Self.object(decoded[0], name: "header")
        payload = try Self.object(decoded[1], name: "payload")
        headerJSON = String(decoding: decoded[0], as: UTF8.self)
        payloadJSON = String(decoding: decoded[1], as: UTF8.self)
        signature = decoded[2]
        self.signingInput = signingInput
    }

    /// Splits the compact form at its two dots and decodes the three segments, straight from the bytes.
    private static func split(_ utf8: UnsafeRawBufferPointer) throws(PostbackRejection) -> (
        decoded: [[UInt8]], signingInput: [UInt8]
    ) {
        var dots: [Int] = []
        for index in 0..<utf8.count where utf8[index] == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else {
            let count = utf8.reduce(0) { $0 + ($1 == UInt8(ascii: ".") ? 1 : 0) } + 1
            throw .malformed("jws-string must have exactly 3 '.'-separated segments, has \(count)")
        }
        let ranges = [0..<dots[0], dots[0] + 1..<dots[1], dots[1] + 1..<utf8.count]
        let names = ["header", "payload", "signature"]
        var decoded: [[UInt8]] = []
        decoded.reserveCapacity(3)
        for (index, range) in ranges.enumerated() {
            guard !range.isEmpty else { throw .malformed("jws-string \(names[index]) segment is empty") }
            switch Base64.decode(utf8: UnsafeRawBufferPointer(rebasing: utf8[range]), alphabet: .url) {
            case .bytes(let bytes): decoded.append(bytes)
            case .invalid(let reason):
                throw .malformed("jws-string \(names[index]) segment is not canonical base64url: \(reason)")
            }
        }
        return (decoded, Array(utf8[0..<dots[1]]))
    }

    private static func object(_ bytes: [UInt8], name: String) throws(PostbackRejection) -> JSONObject {
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(bytes, keys: Postback.internedKeys)
        } catch {
            throw .malformed("JWS \(name) is not valid JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw .malformed("JWS \(name) must be a JSON object, got \(value.kindDescription)")
        }
        return object
    }
}
