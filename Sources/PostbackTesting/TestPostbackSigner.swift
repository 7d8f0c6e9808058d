import Basics
package import PostbackCrypto
import Postbacks

/// The fields of a SKAdNetwork postback to mint with a test key. Nil fields are left out of the body.
package struct SKAdNetworkTestPostback: Sendable {
    /// The `version` text; nil writes no version key (a 1.0 postback).
    package var version: String?
    package var adNetworkID = "example123.skadnetwork"
    package var campaignID: Int64?
    package var sourceIdentifier: String?
    package var appID: Int64 = 525_463_029
    package var transactionID: String
    package var redownload: Bool?
    package var sourceAppID: Int64?
    package var sourceDomain: String?
    package var fidelityType: Int?
    package var didWin: Bool?
    package var postbackSequenceIndex: Int?
    package var conversionValue: Int?
    package var coarseConversionValue: String?
    package var countryCode: String?

    package init(version: String?, transactionID: String) {
        self.version = version
        self.transactionID = transactionID
    }
}

/// The claims and outer fields of an AdAttributionKit postback to mint with a test key.
package struct AdAttributionKitTestPostback: Sendable {
    package var keyID = "apple-cas-identifier/0"
    package var impressionType = "app-impression"
    package var adNetworkID = "example123.adattributionkit"
    package var sourceIdentifier = "4321"
    /// Writes `source-identifier` as a JSON number of the same digits (as impressions do).
    package var sourceIdentifierAsNumber = false
    package var advertisedItemID: Int64 = 525_463_029
    package var conversionType = "download"
    package var postbackIdentifier: String
    package var didWin = true
    package var postbackSequenceIndex = 0
    package var marketplaceID: String? = "com.apple.AppStore"
    package var publisherItemID: Int64?
    package var conversionValue: Int?
    package var coarseConversionValue: String?
    package var adInteractionType: String? = "click"
    package var countryCode: String?
    /// Claims Apple may add later, as (name, raw JSON), appended to the payload.
    package var extraClaims: [(name: String, json: String)] = []

    package init(postbackIdentifier: String) {
        self.postbackIdentifier = postbackIdentifier
    }
}

/// Mints postbacks signed with a test key: for tests, benchmarks, and users checking a deployment
/// (`postback generate`, then verify with `--allow-dev --trust-key`).
///
/// The SKAdNetwork message is built here from its own table of Apple's field orders, deliberately
/// separate from `SKAdNetworkPostback.signedFields`, so a mistake in one shows up as a failed check
/// against the other instead of cancelling out.
package struct TestPostbackSigner: Sendable {
    package let key: ECDSAPrivateKey

    package init(key: ECDSAPrivateKey) { self.key = key }

    /// Apple's documented orders (spec §3.2); `?` marks fields left out, with their separator, when absent.
    static let signedOrder: [String: [String]] = {
        let v2 = ["version", "ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", "?source-app-id"]
        return [
            "1.0": ["ad-network-id", "campaign-id", "app-id", "transaction-id"],
            "2.0": v2,
            "2.1": v2,
            "2.2": v2 + ["fidelity-type"],
            "3.0": v2 + ["fidelity-type", "did-win"],
            "4.0": [
                "version", "ad-network-id", "source-identifier", "app-id", "transaction-id", "redownload",
                "?source-app-id", "?source-domain", "fidelity-type", "did-win", "postback-sequence-index",
            ],
        ]
    }()

    /// A SKAdNetwork body with a valid signature over Apple's message for its version. The key's curve
    /// must be the version's (P-192 for 1.0/2.0).
    package func sign(_ postback: SKAdNetworkTestPostback) throws -> [UInt8] {
        let rendered = renderedFields(postback)
        let order = Self.signedOrder[postback.version ?? "1.0"] ?? Self.signedOrder["4.0"]!
        var values: [String] = []
        for entry in order {
            let optional = entry.hasPrefix("?")
            let name = optional ? String(entry.dropFirst()) : entry
            if let value = rendered[name] { values.append(value) } else if !optional { values.append("") }
        }
        let signature = try key.derSignature(for: SKAdNetworkPostback.join(values))
        return body(postback, signature: Base64.encode(signature, alphabet: .standard))
    }

    /// The same body with the signature made over `message` instead, for forging tests.
    package func body(_ postback: SKAdNetworkTestPostback, signingMessage message: [UInt8]) throws -> [UInt8] {
        body(postback, signature: Base64.encode(try key.derSignature(for: message), alphabet: .standard))
    }

    private func renderedFields(_ postback: SKAdNetworkTestPostback) -> [String: String] {
        var fields: [String: String] = [
            "ad-network-id": postback.adNetworkID,
            "app-id": String(postback.appID),
            "transaction-id": postback.transactionID,
        ]
        fields["version"] = postback.version
        fields["campaign-id"] = postback.campaignID.map { String($0) }
        fields["source-identifier"] = postback.sourceIdentifier
        fields["redownload"] = postback.redownload.map { $0 ? "true" : "false" }
        fields["source-app-id"] = postback.sourceAppID.map { String($0) }
        fields["source-domain"] = postback.sourceDomain
        fields["fidelity-type"] = postback.fidelityType.map { String($0) }
        fields["did-win"] = postback.didWin.map { $0 ? "true" : "false" }
        fields["postback-sequence-index"] = postback.postbackSequenceIndex.map { String($0) }
        return fields
    }

    private func body(_ postback: SKAdNetworkTestPostback, signature: String) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        if let version = postback.version { json.field("version", version) }
        json.field("ad-network-id", postback.adNetworkID)
        if let campaign = postback.campaignID { json.field("campaign-id", campaign) }
        if let source = postback.sourceIdentifier { json.field("source-identifier", source) }
        json.field("transaction-id", postback.transactionID)
        json.field("app-id", postback.appID)
        if let redownload = postback.redownload { json.field("redownload", redownload) }
        if let sourceApp = postback.sourceAppID { json.field("source-app-id", sourceApp) }
        if let domain = postback.sourceDomain { json.field("source-domain", domain) }
        if let fidelity = postback.fidelityType { json.field("fidelity-type", fidelity) }
        if let didWin = postback.didWin { json.field("did-win", didWin) }
        if let value = postback.conversionValue { json.field("conversion-value", value) }
        if let coarse = postback.coarseConversionValue { json.field("coarse-conversion-value", coarse) }
        if let index = postback.postbackSequenceIndex { json.field("postback-sequence-index", index) }
        if let country = postback.countryCode { json.field("country-code", country) }
        json.field("attribution-signature", signature)
        json.endObject()
        return json.bytes
    }

    /// An AdAttributionKit stanza whose compact JWS is signed ES256 with the test key.
    package func sign(_ postback: AdAttributionKitTestPostback) throws -> [UInt8] {
        var header = JSONWriter()
        header.beginObject()
        header.field("kid", postback.keyID)
        header.field("alg", "ES256")
        header.endObject()
        return try sign(postback, headerJSON: header.bytes)
    }

    /// The same with a header of the caller's choosing (for `alg`/`kid`/`jwk` attack tests).
    package func sign(_ postback: AdAttributionKitTestPostback, headerJSON: [UInt8]) throws -> [UInt8] {
        var claims = JSONWriter()
        claims.beginObject()
        claims.field("impression-type", postback.impressionType)
        claims.field("ad-network-identifier", postback.adNetworkID)
        if postback.sourceIdentifierAsNumber {
            claims.key("source-identifier")
            claims.value(rawJSON: Array(postback.sourceIdentifier.utf8))
        } else {
            claims.field("source-identifier", postback.sourceIdentifier)
        }
        claims.field("advertised-item-identifier", postback.advertisedItemID)
        claims.field("conversion-type", postback.conversionType)
        claims.field("postback-identifier", postback.postbackIdentifier)
        claims.field("did-win", postback.didWin)
        claims.field("postback-sequence-index", postback.postbackSequenceIndex)
        if let marketplace = postback.marketplaceID { claims.field("marketplace-identifier", marketplace) }
        if let publisher = postback.publisherItemID { claims.field("publisher-item-identifier", publisher) }
        for claim in postback.extraClaims {
            claims.key(claim.name)
            claims.value(rawJSON: Array(claim.json.utf8))
        }
        claims.endObject()

        let signingInput = Base64.encode(headerJSON, alphabet: .url) + "." + Base64.encode(claims.bytes, alphabet: .url)
        let signature = try key.rawSignature(for: Array(signingInput.utf8))
        let jws = signingInput + "." + Base64.encode(signature, alphabet: .url)

        var body = JSONWriter()
        body.beginObject()
        body.field("jws-string", jws)
        if let value = postback.conversionValue { body.field("conversion-value", value) }
        if let coarse = postback.coarseConversionValue { body.field("coarse-conversion-value", coarse) }
        if let interaction = postback.adInteractionType { body.field("ad-interaction-type", interaction) }
        if let country = postback.countryCode { body.field("country-code", country) }
        body.endObject()
        return body.bytes
    }
}
