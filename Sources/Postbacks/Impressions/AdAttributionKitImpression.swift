package import Basics

/// The claims of an AdAttributionKit JWS impression (Apple, "Generating JWS impressions"). The JWS
/// signature covers the bytes of the payload, so unlike SKAdNetwork no device rebuilds a string:
/// the rules here are Apple's forms (identifiers as JSON integers, the timestamp in milliseconds, a
/// lower-case ad network id, a UUID impression identifier).
package struct AdAttributionKitImpression: Sendable, Equatable {
    /// A UUID, as given (Apple's own example JWS has it upper-case).
    package var impressionIdentifier: String
    /// The publisher app (0 in Apple's example: a development app).
    package var publisherItemIdentifier: Int64
    /// `app-impression`: the only value Apple documents ("Generating JWS impressions").
    package var impressionType: String
    package var adNetworkIdentifier: String
    /// Two to four digits, a JSON integer (as in Apple's example).
    package var sourceIdentifier: Int64
    /// UNIX time in milliseconds.
    package var timestamp: Int64
    package var advertisedItemIdentifier: Int64
    /// Optional.
    package var eligibleForReengagement: Bool?

    package static let claimNames = [
        "impression-identifier", "publisher-item-identifier", "impression-type", "ad-network-identifier", "source-identifier",
        "timestamp", "advertised-item-identifier", "eligible-for-re-engagement",
    ]
    static let claimSet = Set(claimNames)
    /// Apple names no other `impression-type` (no `web-impression`: web ads are SKAdNetwork's), so
    /// anything else is refused by `sign` and `verify`, as the postback verifier flags it unrecognized.
    package static let impressionTypes = ["app-impression"]

    package init(parsing object: JSONObject, place: String = "", extraMembers: [String] = []) throws(PostbackRejection) {
        let fields = try ImpressionFields(
            object, place: place, known: extraMembers.isEmpty ? Self.claimSet : Self.claimSet.union(extraMembers))
        impressionIdentifier = try fields.requiredString("impression-identifier")
        guard ImpressionFields.isUUID(impressionIdentifier) else {
            throw .malformed(
                "\(place)impression-identifier \"\(JSONWriter.escapedForMessage(impressionIdentifier))\" must be a UUID")
        }
        publisherItemIdentifier = try fields.requiredInteger("publisher-item-identifier", in: 0...Int64.max)
        impressionType = try fields.requiredString("impression-type")
        guard Self.impressionTypes.contains(impressionType) else {
            throw .malformed(
                "\(place)impression-type \"\(JSONWriter.escapedForMessage(impressionType))\" is not app-impression, "
                    + "the only type Apple documents for a JWS impression (web ads are SKAdNetwork 4.0 impressions)")
        }
        adNetworkIdentifier = try fields.lowerCaseString("ad-network-identifier", why: ImpressionFields.adNetworkIDRule)
        sourceIdentifier = try fields.requiredInteger("source-identifier", in: 0...9999)
        timestamp = try fields.timestamp("timestamp")
        advertisedItemIdentifier = try fields.requiredInteger("advertised-item-identifier", in: 0...Int64.max)
        eligibleForReengagement = try fields.bool("eligible-for-re-engagement")
    }

    package init(
        impressionIdentifier: String, publisherItemIdentifier: Int64, impressionType: String = "app-impression",
        adNetworkIdentifier: String, sourceIdentifier: Int64, timestamp: Int64, advertisedItemIdentifier: Int64,
        eligibleForReengagement: Bool? = nil
    ) {
        self.impressionIdentifier = impressionIdentifier
        self.publisherItemIdentifier = publisherItemIdentifier
        self.impressionType = impressionType
        self.adNetworkIdentifier = adNetworkIdentifier
        self.sourceIdentifier = sourceIdentifier
        self.timestamp = timestamp
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.eligibleForReengagement = eligibleForReengagement
    }

    /// The claims, in the order of Apple's table.
    package func writeClaims(to json: inout JSONWriter) {
        json.field("impression-identifier", impressionIdentifier)
        json.field("publisher-item-identifier", publisherItemIdentifier)
        json.field("impression-type", impressionType)
        json.field("ad-network-identifier", adNetworkIdentifier)
        json.field("source-identifier", sourceIdentifier)
        json.field("timestamp", timestamp)
        json.field("advertised-item-identifier", advertisedItemIdentifier)
        if let eligibleForReengagement { json.field("eligible-for-re-engagement", eligibleForReengagement) }
    }

    /// The payload JSON: the claims as one compact object.
    package var payloadJSON: [UInt8] {
        var json = JSONWriter(reservingCapacity: 320)
        json.beginObject()
        writeClaims(to: &json)
        json.endObject()
        return json.bytes
    }

    /// The protected header, `{"alg":"ES256","kid":KID}`.
    package static func headerJSON(keyID: String) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 64)
        json.beginObject()
        json.field("alg", "ES256")
        json.field("kid", keyID)
        json.endObject()
        return json.bytes
    }
}
