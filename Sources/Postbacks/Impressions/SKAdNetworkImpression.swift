package import Basics

/// A SKAdNetwork ad impression as the ad network signs it (docs/impressions.md): the values an app
/// passes to StoreKit (`loadProduct(withParameters:)`, `SKAdImpression`) or that Safari gets back from
/// the ad network for a web ad, named as in Apple's signature pages.
///
/// The values are kept in the form the device rebuilds the signed string from: integers as decimal
/// digits, the nonce lower-cased (Apple: "Lowercase the string representation of the nonce. Failing
/// to do so results in an invalid signature").
package struct SKAdNetworkImpression: Sendable, Equatable {
    package var version: SKAdNetworkVersion
    package var adNetworkID: String
    /// Versions up to 3.0: 1–100.
    package var campaignID: Int64?
    /// 4.0: replaces `campaign-id`; an integer of up to four digits.
    package var sourceIdentifier: Int64?
    /// The advertised app (`itunes-item-id`).
    package var itunesItemID: Int64
    /// A UUID, lower-case.
    package var nonce: String
    /// 2.0+ app ads: the publisher app (0 for a development-signed app).
    package var sourceAppID: Int64?
    /// 4.0 web ads (SKAdNetwork for Web Ads): the publisher site, in the slot of `source-app-id`.
    package var sourceDomain: String?
    /// 2.2+: 1 StoreKit-rendered (and web ads), 0 view-through.
    package var fidelityType: Int64?
    /// UNIX time in milliseconds.
    package var timestamp: Int64

    /// How the ad is shown, from the signed values.
    package var kind: ImpressionKind {
        if sourceDomain != nil { return .webAd }
        return fidelityType == 0 ? .viewThrough : .storeKitRendered
    }

    package static let memberNames = [
        "version", "ad-network-id", "campaign-id", "source-identifier", "itunes-item-id", "nonce", "source-app-id",
        "source-domain", "fidelity-type", "timestamp",
    ]

    static let memberSet = Set(memberNames)

    /// Reads and checks an impression object. `extraMembers` are allowed beside the impression's own
    /// (`signature` when verifying) and left to the caller.
    package init(parsing object: JSONObject, extraMembers: [String] = []) throws(PostbackRejection) {
        let fields = try ImpressionFields(
            object, known: extraMembers.isEmpty ? Self.memberSet : Self.memberSet.union(extraMembers))
        let versionText = try fields.requiredString("version")
        guard let version = SKAdNetworkVersion(rawValue: versionText) else {
            throw PostbackRejection(
                .unsupportedVersion,
                "version \"\(JSONWriter.escapedForMessage(versionText))\" has no documented impression signature (known: "
                    + SKAdNetworkVersion.allCases.map(\.rawValue).joined(separator: ", ") + ")")
        }
        self.version = version
        adNetworkID = try fields.lowerCaseString("ad-network-id", why: ImpressionFields.adNetworkIDRule)

        if version.hasSourceIdentifier {
            guard !fields.has("campaign-id") else {
                throw .malformed("campaign-id is not part of a \(versionText) impression (source-identifier replaces it)")
            }
            sourceIdentifier = try fields.requiredInteger("source-identifier", in: 0...9999)
            campaignID = nil
        } else {
            guard !fields.has("source-identifier") else {
                throw .malformed("source-identifier is not part of a \(versionText) impression (it is 4.0's; use campaign-id)")
            }
            campaignID = try fields.requiredInteger("campaign-id", in: 1...100)
            sourceIdentifier = nil
        }
        itunesItemID = try fields.requiredInteger("itunes-item-id", in: 0...Int64.max)

        let nonceText = try fields.requiredString("nonce")
        guard ImpressionFields.isUUID(nonceText) else {
            throw .malformed(
                "nonce \"\(JSONWriter.escapedForMessage(nonceText))\" must be a UUID (8-4-4-4-12 hexadecimal digits)")
        }
        nonce = ImpressionFields.lowerCasedUUID(nonceText)

        sourceAppID = try fields.integer("source-app-id", in: 0...Int64.max)
        sourceDomain = nil
        if version.hasSourceDomain, fields.has("source-domain") {
            sourceDomain = try fields.lowerCaseString("source-domain", why: "the device rebuilds the page's domain in lower case")
        } else if fields.has("source-domain") {
            throw .malformed("source-domain is not part of a \(versionText) impression (web ads are 4.0 and later)")
        }
        if version.hasSourceAppID {
            switch (sourceAppID, sourceDomain) {
            case (nil, nil):
                throw .malformed(
                    "source-app-id is required but missing"
                        + (version.hasSourceDomain ? " (or source-domain, for a web ad)" : ""))
            case (.some, .some):
                throw .malformed("source-app-id and source-domain are both given; an impression has one (app ad or web ad)")
            default: break
            }
        } else if sourceAppID != nil {
            throw .malformed("source-app-id is not part of a \(versionText) impression (2.0 and later)")
        }

        if version.hasFidelityType {
            let fidelity = try fields.integer("fidelity-type", in: 0...1)
            guard let fidelity else {
                throw .malformed("fidelity-type is required but missing (1 StoreKit-rendered or web ad, 0 view-through)")
            }
            if sourceDomain != nil, fidelity != 1 {
                throw .malformed("fidelity-type of a web ad must be 1 (Apple: \"The fidelity type value for web ads is 1\")")
            }
            fidelityType = fidelity
        } else {
            guard !fields.has("fidelity-type") else {
                throw .malformed("fidelity-type is not part of a \(versionText) impression (2.2 and later; view-through ads too)")
            }
            fidelityType = nil
        }
        timestamp = try fields.timestamp("timestamp")
    }

    package init(
        version: SKAdNetworkVersion, adNetworkID: String, campaignID: Int64? = nil, sourceIdentifier: Int64? = nil,
        itunesItemID: Int64, nonce: String, sourceAppID: Int64? = nil, sourceDomain: String? = nil, fidelityType: Int64? = nil,
        timestamp: Int64
    ) {
        self.version = version
        self.adNetworkID = adNetworkID
        self.campaignID = campaignID
        self.sourceIdentifier = sourceIdentifier
        self.itunesItemID = itunesItemID
        self.nonce = nonce
        self.sourceAppID = sourceAppID
        self.sourceDomain = sourceDomain
        self.fidelityType = fidelityType
        self.timestamp = timestamp
    }

    /// The signed values, named, in Apple's order for the version:
    ///
    ///     1.0:      ad-network-id ⁣ campaign-id ⁣ itunes-item-id ⁣ nonce ⁣ timestamp
    ///     2.0, 2.1: version ⁣ ad-network-id ⁣ campaign-id ⁣ itunes-item-id ⁣ nonce ⁣ source-app-id ⁣ timestamp
    ///     2.2, 3.0: … nonce ⁣ source-app-id ⁣ fidelity-type ⁣ timestamp
    ///     4.0:      version ⁣ ad-network-id ⁣ source-identifier ⁣ itunes-item-id ⁣ nonce
    ///               ⁣ (source-app-id | source-domain) ⁣ fidelity-type ⁣ timestamp
    package var signedFields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(8)
        if version.hasSignedVersion { fields.append(("version", version.rawValue)) }
        fields.append(("ad-network-id", adNetworkID))
        if let sourceIdentifier { fields.append(("source-identifier", String(sourceIdentifier))) }
        if let campaignID { fields.append(("campaign-id", String(campaignID))) }
        fields.append(("itunes-item-id", String(itunesItemID)))
        fields.append(("nonce", nonce))
        if let sourceAppID { fields.append(("source-app-id", String(sourceAppID))) }
        if let sourceDomain { fields.append(("source-domain", sourceDomain)) }
        if let fidelityType { fields.append(("fidelity-type", String(fidelityType))) }
        fields.append(("timestamp", String(timestamp)))
        return fields
    }

    /// The UTF-8 bytes signed: the values joined with U+2063, no separator at either end.
    /// Written straight into bytes (no `String` per value), in `signedFields`' order.
    package var signedMessage: [UInt8] {
        let separator = SKAdNetworkPostback.separator
        var message: [UInt8] = []
        message.reserveCapacity(128 + adNetworkID.utf8.count + (sourceDomain?.utf8.count ?? 0))
        func text(_ value: String?) {
            guard let value else { return }
            if !message.isEmpty { message.append(contentsOf: separator) }
            message.append(contentsOf: value.utf8)
        }
        func number(_ value: Int64?) {
            guard let value else { return }
            message.append(contentsOf: separator)
            DecimalDigits.append(value, to: &message)
        }
        text(version.hasSignedVersion ? version.rawValue : nil)
        text(adNetworkID)
        number(sourceIdentifier)
        number(campaignID)
        number(itunesItemID)
        text(nonce)
        number(sourceAppID)
        text(sourceDomain)
        number(fidelityType)
        number(timestamp)
        return message
    }

    /// The members as signed, in Apple's order (`version` too for 1.0: it says which order applies).
    package func writeMembers(to json: inout JSONWriter) {
        json.field("version", version.rawValue)
        json.field("ad-network-id", adNetworkID)
        if let campaignID { json.field("campaign-id", campaignID) }
        if let sourceIdentifier { json.field("source-identifier", sourceIdentifier) }
        json.field("itunes-item-id", itunesItemID)
        json.field("nonce", nonce)
        if let sourceAppID { json.field("source-app-id", sourceAppID) }
        if let sourceDomain { json.field("source-domain", sourceDomain) }
        if let fidelityType { json.field("fidelity-type", fidelityType) }
        json.field("timestamp", timestamp)
    }
}

/// What an impression is, for reports and the differential's mix.
package enum ImpressionKind: String, Sendable, CaseIterable {
    /// SKAdNetwork, `fidelity-type` 1 (or none, before 2.2).
    case storeKitRendered = "storekit-rendered"
    /// SKAdNetwork 2.2+, `fidelity-type` 0.
    case viewThrough = "view-through"
    /// SKAdNetwork 4.0 for Web Ads: `source-domain`.
    case webAd = "web-ad"
    /// AdAttributionKit compact JWS.
    case adAttributionKit = "aak"
}
