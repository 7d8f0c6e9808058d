/// An SKAdNetwork install-validation postback, parsed and checked field by field.
///
/// Fields that a version does not define are ignored, as are unknown keys (relays add their own).
/// See https://developer.apple.com/documentation/storekit/identifying-the-parameters-in-install-validation-postbacks
public struct SKAdNetworkPostback: Sendable, Equatable {
    public let version: SKAdNetworkVersion
    /// The `version` text as received; nil for a 1.0 postback without one.
    public let versionField: String?
    /// Verbatim, never lower-cased: the signature covers the case Apple used.
    public let adNetworkID: String
    /// Versions 1.0–3.0.
    public let campaignID: Int64?
    /// Version 4.0: 2–4 digits as a string.
    public let sourceIdentifier: String?
    public let appID: Int64
    public let transactionID: String
    /// 2.0 and later.
    public let redownload: Bool?
    /// The publisher app; optional (tier-controlled), never in non-winning postbacks, 0 in test mode.
    public let sourceAppID: Int64?
    /// 4.0 web ads, in place of `sourceAppID`.
    public let sourceDomain: String?
    /// 2.2 and later: 1 StoreKit-rendered or web click, 0 view-through.
    public let fidelityType: Int?
    /// 3.0 and later.
    public let didWin: Bool?
    /// 4.0: conversion window 0, 1 or 2.
    public let postbackSequenceIndex: Int?
    // Unsigned observations: anyone holding a genuine postback can change these.
    public let conversionValue: Int?
    public let coarseConversionValue: CoarseConversionValue?
    public let countryCode: String?
    /// The DER ECDSA signature, Base64-decoded.
    public let attributionSignature: [UInt8]

    /// Apple's test scenario: "the postback always contains the source-app-id and conversion-value
    /// parameters with values of 0" (spec §2, §10).
    public var isTestMode: Bool { sourceAppID == 0 }

    /// `transaction-id` plus the conversion window: the three SKAdNetwork 4 postbacks of one install
    /// may share a transaction id, so the window is part of the key.
    public var dedupKey: String { "\(transactionID):\(postbackSequenceIndex ?? 0)" }

    public init(parsing object: JSONObject) throws(PostbackRejection) {
        let fields = FieldReader(object)
        let versionField: String?
        switch object["version"] {
        case nil: versionField = nil
        case .string(let text)?: versionField = text
        case let other?:
            throw .malformed("version must be a string such as \"4.0\", got \(other.kindDescription)")
        }
        let version: SKAdNetworkVersion
        if let versionField {
            guard let known = SKAdNetworkVersion(rawValue: versionField) else {
                throw PostbackRejection(.unsupportedVersion,
                    "version \"\(JSONWriter.escapedForMessage(versionField))\" has no documented signature layout (known: "
                        + SKAdNetworkVersion.allCases.map(\.rawValue).joined(separator: ", ") + ")",
                    protocol: .skadnetwork, version: versionField)
            }
            version = known
        } else {
            version = .v1_0
        }
        do {
            try self.init(version: version, versionField: versionField, fields: fields)
        } catch var rejection {
            rejection.postbackProtocol = .skadnetwork
            rejection.version = version.rawValue
            throw rejection
        }
    }

    private init(version: SKAdNetworkVersion, versionField: String?, fields: FieldReader) throws(PostbackRejection) {
        self.version = version
        self.versionField = versionField
        adNetworkID = try fields.requiredString("ad-network-id")
        if version == .v4_0 {
            sourceIdentifier = try fields.sourceIdentifier("source-identifier")
            campaignID = nil
        } else {
            // Apple's campaign identifiers are "an integer between 1 and 100".
            let campaign = try fields.requiredIdentifier("campaign-id")
            guard (1...100).contains(campaign) else {
                throw .malformed("campaign-id must be 1–100 (SKAdNetwork \(version.rawValue)), got \(campaign)")
            }
            campaignID = campaign
            sourceIdentifier = nil
        }
        appID = try fields.requiredIdentifier("app-id")
        transactionID = try fields.requiredString("transaction-id")

        let isVersion2OrLater = version >= .v2_0
        redownload = isVersion2OrLater ? try fields.requiredBool("redownload") : nil
        sourceAppID = isVersion2OrLater ? try fields.identifier("source-app-id") : nil
        sourceDomain = version == .v4_0 ? try fields.string("source-domain") : nil
        if sourceAppID != nil, sourceDomain != nil {
            throw .malformed("source-app-id and source-domain are both present; a postback is for an app ad or a web ad, not both")
        }
        fidelityType = version >= .v2_2 ? try fields.requiredInteger("fidelity-type", in: 0...1) : nil
        didWin = version >= .v3_0 ? try fields.requiredBool("did-win") : nil
        postbackSequenceIndex = version == .v4_0 ? try fields.requiredInteger("postback-sequence-index", in: 0...2) : nil

        if isVersion2OrLater {
            let values = try fields.conversionValues()
            conversionValue = values.fine
            coarseConversionValue = version == .v4_0 ? values.coarse : nil
        } else {
            conversionValue = nil
            coarseConversionValue = nil
        }
        countryCode = try fields.countryCode()

        if didWin == false {
            if sourceAppID != nil { throw .malformed("a non-winning postback (did-win false) never carries source-app-id") }
            if conversionValue != nil { throw .malformed("a non-winning postback (did-win false) never carries conversion-value") }
        }
        if let index = postbackSequenceIndex, index > 0, conversionValue != nil {
            throw .malformed("conversion-value (fine) is only sent in the first postback; postback-sequence-index is \(index)")
        }

        let signatureText = try fields.requiredString("attribution-signature")
        do {
            attributionSignature = try Base64.decode(signatureText, alphabet: .standard)
        } catch {
            throw .malformed("attribution-signature is not valid Base64: \(error.reason)")
        }
        guard !attributionSignature.isEmpty else { throw .malformed("attribution-signature is empty") }
    }

    /// The signed fields in signing order (spec §3.2), each rendered as it is signed: strings verbatim,
    /// integers in base 10, booleans as `true`/`false`, optional fields left out entirely when absent.
    ///
    ///     1.0: ad-network-id ⁣ campaign-id ⁣ app-id ⁣ transaction-id
    ///     2.0, 2.1: version ⁣ ad-network-id ⁣ campaign-id ⁣ app-id ⁣ transaction-id ⁣ redownload [⁣ source-app-id]
    ///     2.2: … redownload [⁣ source-app-id] ⁣ fidelity-type
    ///     3.0: … redownload [⁣ source-app-id] ⁣ fidelity-type ⁣ did-win
    ///     4.0: version ⁣ ad-network-id ⁣ source-identifier ⁣ app-id ⁣ transaction-id ⁣ redownload
    ///          [⁣ source-app-id | source-domain] ⁣ fidelity-type ⁣ did-win ⁣ postback-sequence-index
    ///
    /// - Parameter omittingZeroSourceAppID: build the test-mode variant, in which Apple leaves a
    ///   `source-app-id` of 0 out of the message (spec §10).
    public func signedFields(omittingZeroSourceAppID: Bool = false) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(10)
        forEachSignedField(omittingZeroSourceAppID: omittingZeroSourceAppID) { fields.append(($0, $1)) }
        return fields
    }

    /// The one place that knows the signing order: `signedFields` and `signedMessage` are both built
    /// from it (the message without an array of field strings in between, as it is built per postback).
    private func forEachSignedField(omittingZeroSourceAppID: Bool, _ body: (_ name: String, _ value: String) -> Void) {
        if version >= .v2_0 { body("version", versionField ?? version.rawValue) }
        body("ad-network-id", adNetworkID)
        if let sourceIdentifier { body("source-identifier", sourceIdentifier) }
        if let campaignID { body("campaign-id", String(campaignID)) }
        body("app-id", String(appID))
        body("transaction-id", transactionID)
        if let redownload { body("redownload", redownload ? "true" : "false") }
        if let sourceAppID, !(omittingZeroSourceAppID && sourceAppID == 0) {
            body("source-app-id", String(sourceAppID))
        }
        if let sourceDomain { body("source-domain", sourceDomain) }
        if let fidelityType { body("fidelity-type", String(fidelityType)) }
        if let didWin { body("did-win", didWin ? "true" : "false") }
        if let postbackSequenceIndex { body("postback-sequence-index", String(postbackSequenceIndex)) }
    }

    /// The exact bytes Apple signs: the signed field values joined with U+2063 INVISIBLE SEPARATOR
    /// (UTF-8 `E2 81 A3`), with no separator at either end.
    public func signedMessage(omittingZeroSourceAppID: Bool = false) -> [UInt8] {
        var message: [UInt8] = []
        message.reserveCapacity(192)
        var isFirst = true
        forEachSignedField(omittingZeroSourceAppID: omittingZeroSourceAppID) { _, value in
            if !isFirst { message.append(contentsOf: Self.separator) }
            isFirst = false
            message.append(contentsOf: value.utf8)
        }
        return message
    }

    /// Joins values with U+2063, as Apple does.
    public static func join(_ values: [String]) -> [UInt8] {
        var message: [UInt8] = []
        message.reserveCapacity(values.reduce(0) { $0 + $1.utf8.count + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { message.append(contentsOf: separator) }
            message.append(contentsOf: value.utf8)
        }
        return message
    }

    /// U+2063 INVISIBLE SEPARATOR in UTF-8.
    public static let separator: [UInt8] = [0xE2, 0x81, 0xA3]
}
