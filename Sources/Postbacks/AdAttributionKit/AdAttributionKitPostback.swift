/// An AdAttributionKit postback: the JSON "stanza" holding `jws-string`, plus unsigned outer fields.
///
/// Only the JWS claims are authenticated. `conversion-value`, `coarse-conversion-value`,
/// `ad-interaction-type` and `country-code` sit outside the signature.
/// See https://developer.apple.com/documentation/adattributionkit/identifying-the-parameters-in-a-postback
public struct AdAttributionKitPostback: Sendable, Equatable {
    public let jws: CompactJWS
    /// The JWS header `kid`, JSON-decoded (so `\/` is `/`), compared exactly against the pinned table.
    public let keyID: String

    // Signed claims.
    public let impressionType: String
    public let adNetworkID: String
    public let sourceIdentifier: String
    public let advertisedItemID: Int64
    public let conversionType: ConversionType
    public let postbackIdentifier: String
    public let didWin: Bool
    public let postbackSequenceIndex: Int
    public let marketplaceID: String?
    public let publisherItemID: Int64?

    // Unsigned observations.
    public let conversionValue: Int?
    public let coarseConversionValue: CoarseConversionValue?
    public let adInteraction: AdInteraction?
    public let countryCode: String?

    /// `postback-identifier` plus the conversion window.
    public var dedupKey: String { "\(postbackIdentifier):\(postbackSequenceIndex)" }

    public init(parsing object: JSONObject) throws(PostbackRejection) {
        do {
            try self.init(checking: object)
        } catch var rejection {
            rejection.postbackProtocol = .adattributionkit
            throw rejection
        }
    }

    private init(checking object: JSONObject) throws(PostbackRejection) {
        let outer = FieldReader(object)
        let jws = try CompactJWS(parsing: try outer.requiredString("jws-string"))
        self.jws = jws

        // RFC 7515 lets a header carry jwk, jku, x5u, x5c and crit; honouring any of them is how JWS
        // libraries have been fooled into using the attacker's key. Apple sends exactly alg and kid.
        let header = FieldReader(jws.header, place: "JWS header ")
        for member in jws.header.members where member.key != "alg" && member.key != "kid" {
            throw .malformed("JWS header member \"\(JSONWriter.escapedForMessage(member.key))\" is not allowed (Apple's header has only alg and kid)")
        }
        let algorithm = try header.requiredString("alg")
        guard algorithm == "ES256" else {
            throw .malformed("JWS alg must be exactly \"ES256\", got \"\(JSONWriter.escapedForMessage(algorithm))\"")
        }
        keyID = try header.requiredString("kid")

        let claims = FieldReader(jws.payload, place: "JWS payload ")
        impressionType = try claims.requiredString("impression-type")
        adNetworkID = try claims.requiredString("ad-network-identifier")
        sourceIdentifier = try claims.sourceIdentifier("source-identifier")
        advertisedItemID = try claims.requiredIdentifier("advertised-item-identifier")
        guard let conversion = try claims.choice("conversion-type", as: ConversionType.self, aliases: ["reengagement": .reengagement]) else {
            throw .malformed("JWS payload conversion-type is required but missing")
        }
        conversionType = conversion
        postbackIdentifier = try claims.requiredString("postback-identifier")
        didWin = try claims.requiredBool("did-win")
        postbackSequenceIndex = try claims.requiredInteger("postback-sequence-index", in: 0...2)
        marketplaceID = try claims.string("marketplace-identifier")
        publisherItemID = try claims.identifier("publisher-item-identifier")

        let values = try outer.conversionValues()
        conversionValue = values.fine
        coarseConversionValue = values.coarse
        adInteraction = try outer.choice("ad-interaction-type", as: AdInteraction.self)
        countryCode = try outer.countryCode()
        if postbackSequenceIndex > 0, conversionValue != nil {
            throw .malformed("conversion-value (fine) is only sent in the first postback; postback-sequence-index is \(postbackSequenceIndex)")
        }
    }
}
