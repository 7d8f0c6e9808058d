package import Basics
package import PostbackCrypto

/// Signs impressions with the ad network's own P-256 private key (docs/impressions.md).
///
/// SKAdNetwork: ECDSA with SHA-256 over the UTF-8 string of the version's values joined with
/// U+2063; the DER signature, standard Base64. AdAttributionKit: a compact JWS, ES256, the raw
/// `r ‖ s` signature, Base64URL without padding.
package struct ImpressionSigner: Sendable {
    package let key: ECDSAPrivateKey
    /// The JWS `kid`; nil uses the impression's `ad-network-identifier`, as Apple asks ("kid - your
    /// ad network ID").
    package let keyID: String?

    package init(key: ECDSAPrivateKey, keyID: String? = nil) throws(PostbackRejection) {
        // Apple's registration pages ask for prime256v1 for SKAdNetwork and AdAttributionKit alike.
        guard key.curve == .p256 else {
            throw .malformed("the key is \(key.curve.rawValue); Apple asks ad networks for a P-256 (prime256v1) key")
        }
        self.key = key
        self.keyID = keyID
    }

    /// The same signer with its own copy of the key, for another thread: threads that share one key
    /// share its reference count and context pool on every signature. Falls back to sharing if the
    /// key cannot be copied (it was read from the same PEM, so that would be an allocation failure).
    package func independentCopy() -> ImpressionSigner {
        guard let copy = try? ECDSAPrivateKey(pemRepresentation: key.pemRepresentation) else { return self }
        return ImpressionSigner(checkedKey: copy, keyID: keyID)
    }

    private init(checkedKey: ECDSAPrivateKey, keyID: String?) {
        self.key = checkedKey
        self.keyID = keyID
    }

    /// The Base64 DER signature of a SKAdNetwork impression.
    package func signature(for impression: SKAdNetworkImpression) throws -> String {
        Base64.encode(try key.derSignature(for: impression.signedMessage), alphabet: .standard)
    }

    /// The compact JWS of an AdAttributionKit impression.
    package func compactJWS(for impression: AdAttributionKitImpression) throws -> String {
        let header = AdAttributionKitImpression.headerJSON(keyID: keyID ?? impression.adNetworkIdentifier)
        let signingInput = Base64.encode(header, alphabet: .url) + "." + Base64.encode(impression.payloadJSON, alphabet: .url)
        return signingInput + "." + Base64.encode(try key.rawSignature(for: Array(signingInput.utf8)), alphabet: .url)
    }

    /// Signs one JSON Lines record and appends the output line: the impression as signed plus
    /// `signature` (an object with `version`, SKAdNetwork) or `jws` (AdAttributionKit claims).
    /// Throws `PostbackRejection` for a record that is not an impression, any other error for a
    /// failure of the signing itself.
    package func signRecord(_ bytes: [UInt8], to json: inout JSONWriter) throws {
        // Everything that can fail happens before the first byte is written.
        try write(ParsedImpression(record: bytes), to: &json)
        json.endLine()
    }
}

/// Reading one record: strict JSON, an object.
enum ImpressionRecord {
    static func object(_ bytes: [UInt8]) throws(PostbackRejection) -> JSONObject {
        var body = bytes[...]
        if body.starts(with: utf8ByteOrderMark) { body = body.dropFirst(3) }
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(Array(body), keys: Postback.internedKeys)
        } catch {
            throw .malformed("not valid JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw .malformed("an impression must be a JSON object, got \(value.kindDescription)")
        }
        return object
    }
}
