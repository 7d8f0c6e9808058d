package import Basics

/// One impression of a signing request, parsed and checked, ready to sign: the same object
/// `postback impression sign` takes on a line (docs/impressions.md).
package enum ParsedImpression: Sendable {
    case skadnetwork(SKAdNetworkImpression)
    case adAttributionKit(AdAttributionKitImpression)

    package var kind: ImpressionKind {
        switch self {
        case .skadnetwork(let impression): impression.kind
        case .adAttributionKit: .adAttributionKit
        }
    }

    /// An object with `version` is a SKAdNetwork impression, one without holds AdAttributionKit claims.
    package init(record bytes: some Collection<UInt8>) throws(PostbackRejection) {
        // The plain form an ad server writes takes the fast path; anything else (and every refusal)
        // the full parser.
        if let plain = bytes.withContiguousStorageIfAvailable({ PlainImpressionReader.read(UnsafeRawBufferPointer($0)) }),
            let impression = plain
        {
            self = .skadnetwork(impression)
            return
        }
        let object = try ImpressionRecord.object(Array(bytes))
        if object["version"] != nil {
            self = .skadnetwork(try SKAdNetworkImpression(parsing: object))
        } else {
            self = .adAttributionKit(try AdAttributionKitImpression(parsing: object))
        }
    }
}

/// The body of a signing-service request (`POST /impressions/sign` on the private listener): JSON
/// Lines, one impression per line, as `postback impression sign` reads them. Blank lines (and a CR
/// before a newline) are skipped; each other line is one impression, answered in order.
package enum ImpressionSigningRequest {
    /// The most impressions one request may carry (the body limit usually comes first).
    package static let maximumImpressions = 1000

    /// The lines of `body` that hold impressions (at most `limit`), with their 1-based line numbers.
    package static func lines(_ body: [UInt8], limit: Int = maximumImpressions) throws(PostbackRejection) -> [(
        number: Int, bytes: ArraySlice<UInt8>
    )] {
        var lines: [(number: Int, bytes: ArraySlice<UInt8>)] = []
        var start = body.startIndex
        var number = 0
        while start < body.endIndex {
            number += 1
            let end = body[start...].firstIndex(of: 0x0A) ?? body.endIndex
            var line = body[start..<end]
            if line.last == 0x0D { line = line.dropLast() }
            if line.contains(where: { $0 != 0x20 && $0 != 0x09 }) {
                guard lines.count < limit else {
                    throw .malformed("a request carries at most \(limit) impressions; send the rest in another")
                }
                lines.append((number, line))
            }
            start = end < body.endIndex ? end + 1 : end
        }
        guard !lines.isEmpty else { throw .malformed("the body holds no impression (JSON Lines, one impression per line)") }
        return lines
    }

    /// Each impression line parsed, or why it is not an impression.
    package static func parse(_ body: [UInt8]) throws(PostbackRejection) -> [(
        number: Int, impression: Result<ParsedImpression, PostbackRejection>
    )] {
        try lines(body).map { line in
            (line.number, Result { () throws(PostbackRejection) in try ParsedImpression(record: line.bytes) })
        }
    }
}

extension ImpressionSigner {
    /// Signs a parsed impression and writes it as signed (values normalized) plus `signature` or
    /// `jws`, one JSON object without a newline: the line `postback impression sign` writes.
    package func write(_ impression: ParsedImpression, to json: inout JSONWriter) throws {
        switch impression {
        case .skadnetwork(let impression):
            let signature = try signature(for: impression)
            json.beginObject()
            impression.writeMembers(to: &json)
            json.field("signature", signature)
        case .adAttributionKit(let impression):
            let jws = try compactJWS(for: impression)
            json.beginObject()
            impression.writeClaims(to: &json)
            json.field("jws", jws)
        }
        json.endObject()
    }
}

/// SKAdNetwork for Web Ads' `AdImpressionRequest`: the body Safari POSTs to the ad network's
/// `/.well-known/skadnetwork/get-signed-payload` when someone taps an attributable web ad.
///
/// Apple documents four members, all required strings: `source_domain`, `source_engagement_type`
/// ("click_to_App_Store"), `source_nonce` (the link's `attributionSourceNonce`: "A Base64URL-encoded
/// string representation of a UUID") and `version` ("4.0" or later). Members Apple may add later are
/// ignored rather than refused: a refusal here would silently cost the ad network its attributions.
package struct WebAdRequest: Sendable, Equatable {
    package var sourceDomain: String
    package var sourceEngagementType: String
    /// The nonce as the signature carries it: the UUID's lower-case dashed form.
    package var nonce: String
    package var version: String

    package static let memberNames = ["source_domain", "source_engagement_type", "source_nonce", "version"]

    package init(body: [UInt8]) throws(PostbackRejection) {
        let object = try ImpressionRecord.object(body)
        func string(_ name: String) throws(PostbackRejection) -> String {
            guard let value = object[name] else { throw .malformed("\(name) is required but missing") }
            guard case .string(let text) = value, !text.isEmpty else {
                throw .malformed("\(name) must be a non-empty string, got \(value.kindDescription)")
            }
            if let bad = UnicodeSafety.firstControlOrInvisible(in: text) {
                throw .malformed("\(name) contains \(UnicodeSafety.describe(bad))")
            }
            return text
        }
        sourceDomain = try string("source_domain")
        sourceEngagementType = try string("source_engagement_type")
        version = try string("version")
        let encoded = try string("source_nonce")
        guard let nonce = Self.uuid(base64URL: encoded) else {
            throw .malformed(
                "source_nonce \"\(JSONWriter.escapedForMessage(encoded))\" is not a Base64URL-encoded UUID (16 bytes)")
        }
        self.nonce = nonce
    }

    /// The lower-case dashed UUID of a link's `attributionSourceNonce` (16 bytes in Base64URL, with or
    /// without its `==` padding, as Apple's link example and developers' examples differ), or nil.
    package static func uuid(base64URL text: String) -> String? {
        var unpadded = Substring(text)
        if unpadded.hasSuffix("==") { unpadded = unpadded.dropLast(2) }
        guard unpadded.utf8.count == 22, let bytes = Base64.decode(String(unpadded), alphabet: .url).value, bytes.count == 16
        else { return nil }
        let hex = Hex.encode(bytes)
        let characters = Array(hex)
        var uuid = ""
        uuid.reserveCapacity(36)
        for (index, character) in characters.enumerated() {
            if index == 8 || index == 12 || index == 16 || index == 20 { uuid.append("-") }
            uuid.append(character)
        }
        return uuid
    }

    /// The `attributionSourceNonce` for a UUID (either case, dashed): Base64URL of its 16 bytes,
    /// unpadded (as in Apple's link example).
    package static func base64URL(uuid: String) -> String? {
        guard ImpressionFields.isUUID(uuid) else { return nil }
        var bytes: [UInt8] = []
        var high: UInt8?
        for byte in uuid.utf8 where byte != UInt8(ascii: "-") {
            let nibble = byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : (byte | 0x20) - UInt8(ascii: "a") + 10
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return Base64.encode(bytes, alphabet: .url)
    }
}

extension SKAdNetworkImpression {
    /// The `AdImpressionResponse` for this web ad (SKAdNetwork for Web Ads), signed: the members
    /// Apple lists for the response, in snake_case, with `signature` the Base64 DER signature
    /// ("use this value in the signature parameter of the AdImpressionResponse").
    package func writeWebAdResponse(signature: String, to json: inout JSONWriter) {
        json.beginObject()
        json.field("version", version.rawValue)
        json.field("ad_network_id", adNetworkID)
        if let sourceIdentifier { json.field("source_identifier", sourceIdentifier) }
        json.field("itunes_item_id", itunesItemID)
        json.field("nonce", nonce)
        if let sourceDomain { json.field("source_domain", sourceDomain) }
        json.field("timestamp", timestamp)
        json.field("signature", signature)
        json.endObject()
    }
}
