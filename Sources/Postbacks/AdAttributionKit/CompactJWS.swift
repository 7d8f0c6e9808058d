/// A compact JWS (RFC 7515 §7.1) as AdAttributionKit sends it in `jws-string`:
///
///     BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(signature)
///
/// Parsing is strict: exactly three non-empty segments of canonical unpadded base64url, header and
/// payload strict JSON objects. The signing input is the first two segments *as received*: Apple's
/// genuine header escapes the slash in its `kid` (`apple-development-identifier\/1`), so re-encoding
/// the JSON would change the bytes.
public struct CompactJWS: Sendable, Equatable {
    /// The ASCII bytes of `header "." payload`, which the signature covers.
    public let signingInput: [UInt8]
    public let header: JSONObject
    public let payload: JSONObject
    /// The decoded third segment; 64 bytes (raw r ‖ s) for a well-formed ES256 signature.
    public let signature: [UInt8]
    /// The decoded header and payload JSON text, for `explain`.
    public let headerJSON: String
    public let payloadJSON: String

    public init(parsing text: String) throws(PostbackRejection) {
        let segments = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw .malformed("jws-string must have exactly 3 '.'-separated segments, has \(segments.count)")
        }
        let names = ["header", "payload", "signature"]
        var decoded: [[UInt8]] = []
        for (index, segment) in segments.enumerated() {
            guard !segment.isEmpty else { throw .malformed("jws-string \(names[index]) segment is empty") }
            do {
                decoded.append(try Base64.decode(Array(segment), alphabet: .url))
            } catch {
                throw .malformed("jws-string \(names[index]) segment is not canonical base64url: \(error.reason)")
            }
        }
        header = try Self.object(decoded[0], name: "header")
        payload = try Self.object(decoded[1], name: "payload")
        headerJSON = String(decoding: decoded[0], as: UTF8.self)
        payloadJSON = String(decoding: decoded[1], as: UTF8.self)
        signature = decoded[2]
        signingInput = Array(segments[0]) + [UInt8(ascii: ".")] + Array(segments[1])
    }

    private static func object(_ bytes: [UInt8], name: String) throws(PostbackRejection) -> JSONObject {
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(bytes)
        } catch {
            throw .malformed("JWS \(name) is not valid JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw .malformed("JWS \(name) must be a JSON object, got \(value.kindDescription)")
        }
        return object
    }
}
