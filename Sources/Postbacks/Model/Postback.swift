package import Basics

/// A postback of either framework, parsed but not yet verified.
package enum Postback: Sendable, Equatable {
    case skadnetwork(SKAdNetworkPostback)
    case adAttributionKit(AdAttributionKitPostback)

    package var postbackProtocol: PostbackProtocol {
        switch self {
        case .skadnetwork: return .skadnetwork
        case .adAttributionKit: return .adattributionkit
        }
    }

    /// The SKAdNetwork version ("1.0" … "4.0"); nil for AdAttributionKit, which has no version field.
    package var version: String? {
        switch self {
        case .skadnetwork(let postback): return postback.version.rawValue
        case .adAttributionKit: return nil
        }
    }

    /// The signed identifier plus conversion window that makes a postback unique (spec §1, §7.9).
    package var dedupKey: String {
        switch self {
        case .skadnetwork(let postback): return postback.dedupKey
        case .adAttributionKit(let postback): return postback.dedupKey
        }
    }

    /// Every value not taken exactly as sent, in the order they were read.
    package var flags: [PostbackFlag] {
        switch self {
        case .skadnetwork(let postback): return postback.flags
        case .adAttributionKit(let postback): return postback.flags
        }
    }

    /// The members Apple documents for a postback body (docs/postback-spec.md): every SKAdNetwork
    /// version's fields and AdAttributionKit's outer stanza. A body's other members were added by
    /// someone else (a relay, or whoever posted it first), and are not Apple's.
    package static let documentedFields: Set<String> = [
        "version", "ad-network-id", "campaign-id", "source-identifier", "app-id", "transaction-id", "redownload",
        "source-app-id", "source-domain", "fidelity-type", "did-win", "postback-sequence-index", "conversion-value",
        "coarse-conversion-value", "attribution-signature", "jws-string", "ad-interaction-type", "country-code",
    ]

    /// Every member name of a postback as Apple sends it: the body's documented fields, the JWS header's
    /// `kid` and `alg` and AdAttributionKit's claims. `StrictJSONParser` returns them as shared strings
    /// (a body, its JWS parts, a forwarded body and an impression request all use them).
    package static let internedKeys = InternedKeys(
        documentedFields.sorted() + ["kid", "alg"] + AdAttributionKitPostback.knownClaims.sorted())

    /// The UTF-8 byte-order mark some relays put in front of the body.
    static let byteOrderMark = utf8ByteOrderMark

    /// Parses a postback body: a JSON object with `attribution-signature` (SKAdNetwork) or
    /// `jws-string` (AdAttributionKit).
    /// A UTF-8 byte-order mark in front is skipped (and flagged): it is outside the JSON, so outside
    /// anything Apple signed.
    package init(body: UnsafeRawBufferPointer) throws(PostbackRejection) {
        let hasByteOrderMark = body.count >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF
        let json = hasByteOrderMark ? UnsafeRawBufferPointer(rebasing: body[3...]) : body
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(json, keys: Postback.internedKeys)
        } catch {
            throw .notJSON(error)
        }
        guard case .object(let object) = value else {
            // An array is the usual way to put several postbacks in one file: say what works instead.
            let isArray = if case .array = value { true } else { false }
            let hint =
                isArray ? " (several postbacks go one JSON object per line: JSON Lines in a file, one per request over HTTP)" : ""
            throw .malformed("a postback must be a JSON object, got \(value.kindDescription)\(hint)")
        }
        try self.init(
            object: object,
            leadingFlags: hasByteOrderMark
                ? [PostbackFlag(field: .body, action: .normalized, raw: "EF BB BF", note: "UTF-8 byte-order mark skipped")] : [])
    }

    package init(body: [UInt8]) throws(PostbackRejection) {
        var result: Result<Postback, PostbackRejection> = .failure(.malformed("empty input"))
        body.withUnsafeBytes { bytes in result = Result { () throws(PostbackRejection) in try Postback(body: bytes) } }
        self = try result.get()
    }

    package init(object: JSONObject) throws(PostbackRejection) {
        try self.init(object: object, leadingFlags: [])
    }

    init(object: JSONObject, leadingFlags: [PostbackFlag]) throws(PostbackRejection) {
        let isAdAttributionKit = object["jws-string"] != nil
        if isAdAttributionKit, object["attribution-signature"] != nil {
            throw .malformed("both jws-string (AdAttributionKit) and attribution-signature (SKAdNetwork) are present")
        }
        self =
            isAdAttributionKit
            ? .adAttributionKit(try AdAttributionKitPostback(parsing: object, leadingFlags: leadingFlags))
            : .skadnetwork(try SKAdNetworkPostback(parsing: object, leadingFlags: leadingFlags))
    }
}
