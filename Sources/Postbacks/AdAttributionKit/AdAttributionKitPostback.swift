package import Basics

/// An AdAttributionKit postback: the JSON "stanza" holding `jws-string`, plus unsigned outer fields.
///
/// Only the JWS claims are authenticated. `conversion-value`, `coarse-conversion-value`,
/// `ad-interaction-type` and `country-code` sit outside the signature.
/// See https://developer.apple.com/documentation/adattributionkit/identifying-the-parameters-in-a-postback
package struct AdAttributionKitPostback: Sendable, Equatable {
    package let jws: CompactJWS
    /// The JWS header `kid`, JSON-decoded (so `\/` is `/`), compared exactly against the pinned table.
    package let keyID: String

    // Signed claims. Values we do not know yet are kept verbatim and flagged `unrecognized`.
    package let impressionType: String
    package let adNetworkID: String
    package let sourceIdentifier: String
    package let advertisedItemID: Int64
    /// Nil when Apple signed a conversion type we do not know; `conversionTypeText` has it verbatim.
    package let conversionType: ConversionType?
    package let conversionTypeText: String
    package let postbackIdentifier: String
    package let didWin: Bool
    package let postbackSequenceIndex: Int64
    package let marketplaceID: String?
    package let publisherItemID: Int64?

    // Unsigned observations, never fatal.
    package let conversionValue: Int?
    package let coarseConversionValue: CoarseConversionValue?
    package let adInteraction: AdInteraction?
    package let countryCode: String?
    /// Every value not taken exactly as sent (see `PostbackFlag`).
    package let flags: [PostbackFlag]

    /// `postback-identifier` plus the conversion window.
    package var dedupKey: String { "\(postbackIdentifier):\(postbackSequenceIndex)" }

    /// The claims of Apple's documented payload (spec §4.4); any other claim is flagged.
    static let knownClaims: Set<String> = [
        "impression-type", "ad-network-identifier", "source-identifier", "advertised-item-identifier", "conversion-type",
        "postback-identifier", "did-win", "postback-sequence-index", "marketplace-identifier", "publisher-item-identifier",
    ]

    /// RFC 7515 lets a header carry these; honouring any of them is how JWS libraries have been fooled
    /// into using the attacker's key (or skipping a check they do not understand).
    static let refusedHeaderMembers: Set<String> = ["crit", "jku", "jwk", "x5u", "x5c"]

    package init(parsing object: JSONObject, leadingFlags: [PostbackFlag] = []) throws(PostbackRejection) {
        do {
            try self.init(checking: object, flags: leadingFlags)
        } catch var rejection {
            rejection.postbackProtocol = .adattributionkit
            throw rejection
        }
    }

    private init(checking object: JSONObject, flags: [PostbackFlag]) throws(PostbackRejection) {
        var flags = flags
        let outer = FieldReader(object)
        let jws = try CompactJWS(parsing: try outer.requiredString("jws-string"))
        self.jws = jws

        // Apple sends exactly alg and kid. typ and cty only describe the content and are ignored;
        // other members we do not know are ignored too, but flagged.
        let header = FieldReader(jws.header, place: "JWS header ")
        for member in jws.header.members where member.key != "alg" && member.key != "kid" {
            if Self.refusedHeaderMembers.contains(member.key) {
                throw .malformed(
                    "JWS header member \"\(JSONWriter.escapedForMessage(member.key))\" is not allowed (it could name another key or demand checks we do not make)"
                )
            }
            if member.key != "typ" && member.key != "cty" {
                flags.append(
                    PostbackFlag(
                        field: .jwsHeader, action: .unrecognized, raw: member.key, note: "unknown JWS header member, ignored"))
            }
        }
        let algorithm = try header.requiredString("alg")
        guard algorithm == "ES256" else {
            throw .malformed("JWS alg must be exactly \"ES256\", got \"\(JSONWriter.escapedForMessage(algorithm))\"")
        }
        keyID = try header.requiredString("kid")

        let claims = FieldReader(jws.payload, place: "JWS payload ")
        impressionType = try claims.requiredString("impression-type")
        if impressionType != "app-impression" {
            flags.append(
                PostbackFlag(
                    field: .impressionType, action: .unrecognized, raw: FieldReader.rawText(.string(impressionType)),
                    note: "not app-impression; kept as signed"))
        }
        adNetworkID = try claims.requiredString("ad-network-identifier")
        sourceIdentifier = try claims.requiredSignedDigits("source-identifier", field: .sourceIdentifier, flags: &flags)
        if !FieldReader.isKnownSourceIdentifier(sourceIdentifier) {
            flags.append(
                PostbackFlag(
                    field: .sourceIdentifier, action: .unrecognized, raw: FieldReader.rawText(.string(sourceIdentifier)),
                    note: "not 2 to 4 digits; kept as signed"))
        }
        advertisedItemID = try claims.requiredSignedInteger(
            "advertised-item-identifier", field: .advertisedItemIdentifier, flags: &flags)
        conversionTypeText = try claims.requiredString("conversion-type")
        // Apple's prose once spells it reengagement; its payloads say re-engagement (spec §8).
        conversionType =
            ConversionType(rawValue: conversionTypeText) ?? (conversionTypeText == "reengagement" ? .reengagement : nil)
        if conversionType == nil {
            flags.append(
                PostbackFlag(
                    field: .conversionType, action: .unrecognized, raw: FieldReader.rawText(.string(conversionTypeText)),
                    note: "unknown conversion type; kept as signed"))
        }
        postbackIdentifier = try claims.requiredString("postback-identifier")
        didWin = try claims.requiredSignedBool("did-win", field: .didWin, flags: &flags)
        postbackSequenceIndex = try claims.requiredSignedInteger(
            "postback-sequence-index", field: .postbackSequenceIndex, flags: &flags)
        if postbackSequenceIndex > 2 {
            flags.append(
                PostbackFlag(
                    field: .postbackSequenceIndex, action: .unrecognized, raw: String(postbackSequenceIndex),
                    note: "not 0, 1 or 2; kept as signed"))
        }
        marketplaceID = try claims.string("marketplace-identifier")
        publisherItemID = try claims.signedInteger("publisher-item-identifier", field: .publisherItemIdentifier, flags: &flags)
        // Keys are unique and the eight required claims are there, so a payload with no more members
        // than the claims read has none we do not know (and needs no lookup per member).
        let claimsRead = 8 + (marketplaceID == nil ? 0 : 1) + (publisherItemID == nil ? 0 : 1)
        if jws.payload.members.count > claimsRead {
            for member in jws.payload.members where !Self.knownClaims.contains(member.key) {
                flags.append(
                    PostbackFlag(field: .jwsClaim, action: .unrecognized, raw: member.key, note: "unknown claim; kept as signed"))
            }
        }

        // Unsigned outer fields; they cannot throw.
        // A non-winning postback carries no conversion value of any kind (as SKAdNetwork's).
        let values = outer.conversionValues(
            fineAllowed: didWin && postbackSequenceIndex == 0, coarseAllowed: didWin,
            whyNoFine: didWin
                ? "only the first postback carries a fine value; postback-sequence-index is \(postbackSequenceIndex)"
                : "a non-winning postback never carries conversion-value",
            whyNoCoarse: "a non-winning postback never carries coarse-conversion-value",
            flags: &flags)
        conversionValue = values.fine
        coarseConversionValue = values.coarse
        adInteraction = outer.adInteraction(flags: &flags)
        countryCode = outer.countryCode(flags: &flags)
        self.flags = flags
    }
}
