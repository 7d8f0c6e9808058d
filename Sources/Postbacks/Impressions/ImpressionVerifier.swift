import Basics
package import PostbackCrypto

/// An ad network's public key for checking its impressions; `keyID` selects it by JWS `kid`.
package struct ImpressionKey: Sendable {
    package let name: String
    package let keyID: String?
    package let key: ECDSAPublicKey

    package init(name: String, keyID: String? = nil, key: ECDSAPublicKey) {
        self.name = name
        self.keyID = keyID
        self.key = key
    }
}

/// The verdict on one impression.
package struct ImpressionVerdict: Sendable {
    package var status: VerificationStatus
    package var kind: ImpressionKind?
    /// The SKAdNetwork version, or nil.
    package var version: String?
    package var reason: String?
    /// The key that verified it.
    package var keyName: String?
    /// What the signature covers, once the record could be read: SKAdNetwork's values in order, or
    /// the JWS header and payload.
    package var signedFields: [(name: String, value: String)] = []
    /// The exact signed text: the U+2063-joined string, or the JWS signing input.
    package var signedString: String?

    package var isVerified: Bool { status == .verified }

    package init(status: VerificationStatus, reason: String? = nil) {
        self.status = status
        self.reason = reason
    }
}

/// Checks impressions as the device would: the record parsed with the postback verifier's strictness,
/// the signed string rebuilt from the values in Apple's order (the nonce lower-cased), and the
/// signature checked with the ad network's public key.
package struct ImpressionVerifier: Sendable {
    package let keys: [ImpressionKey]

    package init(keys: [ImpressionKey]) { self.keys = keys }

    package func verify(_ bytes: [UInt8]) -> ImpressionVerdict {
        var verdict = ImpressionVerdict(status: .malformed)
        do throws(PostbackRejection) {
            let object = try ImpressionRecord.object(bytes)
            if object["version"] != nil {
                try verifySKAdNetwork(object, into: &verdict)
            } else {
                try verifyAdAttributionKit(object, into: &verdict)
            }
        } catch {
            verdict.status = error.status
            verdict.reason = error.reason
        }
        return verdict
    }

    private func verifySKAdNetwork(_ object: JSONObject, into verdict: inout ImpressionVerdict) throws(PostbackRejection) {
        if case .string(let version)? = object["version"] { verdict.version = version }
        let impression = try SKAdNetworkImpression(parsing: object, extraMembers: ["signature"])
        verdict.kind = impression.kind
        verdict.signedFields = impression.signedFields
        verdict.signedString = String(decoding: impression.signedMessage, as: UTF8.self)
        let fields = try ImpressionFields(object, known: SKAdNetworkImpression.memberSet.union(["signature"]))
        let text = try fields.requiredString("signature")
        let der: [UInt8]
        switch Base64.decode(text, alphabet: .standard) {
        case .bytes(let bytes): der = bytes
        case .invalid(let reason): throw .malformed("signature is not canonical Base64: \(reason)")
        }
        let message = impression.signedMessage
        guard let key = keys.first(where: { $0.key.isValidSignature(derSignature: der, for: message) }) else {
            throw PostbackRejection(.invalidSignature, invalidReason(keys))
        }
        verdict.status = .verified
        verdict.keyName = key.name
    }

    private func verifyAdAttributionKit(_ object: JSONObject, into verdict: inout ImpressionVerdict) throws(PostbackRejection) {
        verdict.kind = .adAttributionKit
        let outer = try ImpressionFields(object, known: AdAttributionKitImpression.claimSet.union(["jws"]))
        guard outer.has("jws") else {
            throw .malformed(
                "an impression is a SKAdNetwork object with version and signature, or AdAttributionKit claims with jws; jws is missing"
            )
        }
        let jws = try CompactJWS(parsing: try outer.requiredString("jws"))
        let header = try ImpressionFields(jws.header, place: "JWS header ", known: ["alg", "kid", "typ"])
        let algorithm = try header.requiredString("alg")
        guard algorithm == "ES256" else {
            throw .malformed("JWS header alg must be ES256, got \"\(JSONWriter.escapedForMessage(algorithm))\"")
        }
        let keyID = try header.requiredString("kid")
        _ = try AdAttributionKitImpression(parsing: jws.payload, place: "JWS payload ")
        verdict.signedFields = [("header", jws.headerJSON), ("payload", jws.payloadJSON)]
        verdict.signedString = String(decoding: jws.signingInput, as: UTF8.self)
        for member in object.members where member.key != "jws" && jws.payload[member.key] != member.value {
            throw .malformed("\(member.key) beside the JWS differs from the signed claim")
        }
        guard jws.signature.count == 64 else {
            throw .malformed("JWS signature must be 64 bytes (ES256 r ‖ s), has \(jws.signature.count)")
        }
        let named = keys.filter { $0.keyID == keyID }
        let candidates = named.isEmpty ? keys.filter { $0.keyID == nil } : named
        guard !candidates.isEmpty else {
            throw PostbackRejection(.untrustedKey, "no key was given for kid \"\(JSONWriter.escapedForMessage(keyID))\"")
        }
        guard
            let key = candidates.first(where: {
                $0.key.isValidSignature(rawSignature: jws.signature, for: jws.signingInput)
            })
        else { throw PostbackRejection(.invalidSignature, invalidReason(candidates)) }
        verdict.status = .verified
        verdict.keyName = key.name
    }

    private func invalidReason(_ keys: [ImpressionKey]) -> String {
        "the signature does not verify with " + (keys.count == 1 ? "the key \(keys[0].name)" : "any of \(keys.count) keys")
            + " over the signed string"
    }
}
