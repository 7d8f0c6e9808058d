package import Basics

/// An SKAdNetwork install-validation postback, parsed and checked field by field.
///
/// Fields that a version does not define are ignored, as are unknown keys (relays add their own).
/// See https://developer.apple.com/documentation/storekit/identifying-the-parameters-in-install-validation-postbacks
package struct SKAdNetworkPostback: Sendable, Equatable {
    package let version: SKAdNetworkVersion
    /// The `version` text as received; nil for a 1.0 postback without one.
    package let versionField: String?
    /// Verbatim, never lower-cased: the signature covers the case Apple used.
    package let adNetworkID: String
    /// Versions 1.0–3.0.
    package let campaignID: Int64?
    /// Version 4.0: 2–4 digits as a string.
    package let sourceIdentifier: String?
    package let appID: Int64
    package let transactionID: String
    /// 2.0 and later.
    package let redownload: Bool?
    /// The publisher app; optional (tier-controlled), never in non-winning postbacks, 0 in test mode.
    package let sourceAppID: Int64?
    /// 4.0 web ads, in place of `sourceAppID`.
    package let sourceDomain: String?
    /// 2.2 and later: 1 StoreKit-rendered or web click, 0 view-through; any other signed value is
    /// kept verbatim (and flagged `unrecognized`).
    package let fidelityType: Int64?
    /// 3.0 and later.
    package let didWin: Bool?
    /// 4.0: conversion window 0, 1 or 2 (a later window Apple may add is kept and flagged).
    package let postbackSequenceIndex: Int64?
    // Unsigned observations: anyone holding a genuine postback can change these. Read after the
    // signed fields and never fatal: what cannot be used is dropped and flagged.
    package let conversionValue: Int?
    package let coarseConversionValue: CoarseConversionValue?
    package let countryCode: String?
    /// The DER ECDSA signature, Base64-decoded.
    package let attributionSignature: [UInt8]
    /// Every value not taken exactly as sent (see `PostbackFlag`).
    package let flags: [PostbackFlag]

    /// Apple's test scenario: "the postback always contains the source-app-id and conversion-value
    /// parameters with values of 0" (spec §2, §10).
    package var isTestMode: Bool { sourceAppID == 0 }

    /// `transaction-id` plus the conversion window: the three SKAdNetwork 4 postbacks of one install
    /// may share a transaction id, so the window is part of the key.
    package var dedupKey: String { "\(transactionID):\(postbackSequenceIndex ?? 0)" }

    package init(parsing object: JSONObject, leadingFlags: [PostbackFlag] = []) throws(PostbackRejection) {
        let fields = FieldReader(object)
        var flags = leadingFlags
        let versionField: String?
        switch object["version"] {
        // Absent or null: a 1.0 postback (one MMP's forwarding API writes "version": null).
        case nil, .null?: versionField = nil
        case .string(let text)?: versionField = text
        // The number 4.0 has the text Apple signs; 4 or 4.00 would not, and are unsupported below.
        case .number(let number)?:
            versionField = number.text
            flags.append(
                PostbackFlag(
                    field: .version, action: .normalized, raw: number.text, note: "number read as the version text it signs"))
        case let other?:
            throw .malformed("version must be a string such as \"4.0\", got \(other.kindDescription)")
        }
        let version: SKAdNetworkVersion
        if let versionField {
            guard let known = SKAdNetworkVersion(rawValue: versionField) else {
                throw PostbackRejection(
                    .unsupportedVersion,
                    "version \"\(JSONWriter.escapedForMessage(versionField))\" has no documented signature layout (known: "
                        + SKAdNetworkVersion.allCases.map(\.rawValue).joined(separator: ", ") + ")",
                    protocol: .skadnetwork, version: versionField)
            }
            version = known
        } else {
            version = .v1_0
        }
        do {
            try self.init(version: version, versionField: versionField, fields: fields, flags: flags)
        } catch var rejection {
            rejection.postbackProtocol = .skadnetwork
            rejection.version = version.rawValue
            throw rejection
        }
    }

    /// Signed fields first: only they can make the postback malformed, and only when the signed
    /// message cannot be built from them. Signed values we do not know are kept and flagged.
    private init(version: SKAdNetworkVersion, versionField: String?, fields: FieldReader, flags: [PostbackFlag])
        throws(PostbackRejection)
    {
        var flags = flags
        self.version = version
        self.versionField = versionField
        adNetworkID = try fields.requiredString("ad-network-id")
        if version.hasSourceIdentifier {
            let identifier = try fields.requiredSignedDigits("source-identifier", field: .sourceIdentifier, flags: &flags)
            if !FieldReader.isKnownSourceIdentifier(identifier) {
                flags.append(
                    PostbackFlag(
                        field: .sourceIdentifier, action: .unrecognized, raw: FieldReader.rawText(.string(identifier)),
                        note: "not 2 to 4 digits; kept as signed"))
            }
            sourceIdentifier = identifier
            campaignID = nil
        } else {
            // Apple's campaign identifiers are "an integer between 1 and 100".
            let campaign = try fields.requiredSignedInteger("campaign-id", field: .campaignID, flags: &flags)
            if !(1...100).contains(campaign) {
                flags.append(
                    PostbackFlag(
                        field: .campaignID, action: .unrecognized, raw: String(campaign),
                        note: "outside Apple's 1–100; kept as signed"))
            }
            campaignID = campaign
            sourceIdentifier = nil
        }
        appID = try fields.requiredSignedInteger("app-id", field: .appID, flags: &flags)
        transactionID = try fields.requiredString("transaction-id")

        redownload = version.hasRedownload ? try fields.requiredSignedBool("redownload", field: .redownload, flags: &flags) : nil
        sourceAppID = version.hasSourceAppID ? try fields.signedInteger("source-app-id", field: .sourceAppID, flags: &flags) : nil
        sourceDomain = version.hasSourceDomain ? try fields.string("source-domain") : nil
        if let sourceAppID, sourceDomain != nil {
            flags.append(
                PostbackFlag(
                    field: .sourceAppID, action: .unrecognized, raw: String(sourceAppID),
                    note: "sent together with source-domain; kept as signed"))
        }
        let fidelity =
            version.hasFidelityType ? try fields.requiredSignedInteger("fidelity-type", field: .fidelityType, flags: &flags) : nil
        if let fidelity, fidelity > 1 {
            flags.append(
                PostbackFlag(
                    field: .fidelityType, action: .unrecognized, raw: String(fidelity), note: "not 0 or 1; kept as signed"))
        }
        fidelityType = fidelity
        didWin = version.hasDidWin ? try fields.requiredSignedBool("did-win", field: .didWin, flags: &flags) : nil
        let sequenceIndex =
            version.hasConversionWindows
            ? try fields.requiredSignedInteger("postback-sequence-index", field: .postbackSequenceIndex, flags: &flags) : nil
        if let sequenceIndex, sequenceIndex > 2 {
            flags.append(
                PostbackFlag(
                    field: .postbackSequenceIndex, action: .unrecognized, raw: String(sequenceIndex),
                    note: "not 0, 1 or 2; kept as signed"))
        }
        postbackSequenceIndex = sequenceIndex
        if didWin == false, let sourceAppID {
            flags.append(
                PostbackFlag(
                    field: .sourceAppID, action: .unrecognized, raw: String(sourceAppID),
                    note: "a non-winning postback never carries source-app-id; kept as signed"))
        }

        let signatureText = try fields.requiredString("attribution-signature")
        switch Base64.decode(signatureText, alphabet: .standard) {
        case .bytes(let bytes): attributionSignature = bytes
        case .invalid(let reason): throw .malformed("attribution-signature is not valid Base64: \(reason)")
        }
        guard !attributionSignature.isEmpty else { throw .malformed("attribution-signature is empty") }

        // Unsigned fields last; they cannot throw.
        if version.hasConversionValue {
            let whyNoFine =
                didWin == false
                ? "a non-winning postback never carries conversion-value"
                : "only the first postback carries a fine value; postback-sequence-index is \(sequenceIndex ?? 0)"
            // Apple: "Nonwinning postbacks don't contain conversion values", fine or coarse.
            let values = fields.conversionValues(
                fineAllowed: didWin != false && (sequenceIndex ?? 0) == 0,
                coarseAllowed: version.hasCoarseValues && didWin != false,
                whyNoFine: whyNoFine,
                whyNoCoarse: version.hasCoarseValues
                    ? "a non-winning postback never carries coarse-conversion-value" : "this version has no coarse value",
                flags: &flags)
            conversionValue = values.fine
            coarseConversionValue = values.coarse
        } else {
            conversionValue = nil
            coarseConversionValue = nil
        }
        countryCode = fields.countryCode(flags: &flags)
        self.flags = flags
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
    package func signedFields(omittingZeroSourceAppID: Bool = false) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(10)
        forEachSignedField(omittingZeroSourceAppID: omittingZeroSourceAppID) { fields.append(($0, $1)) }
        return fields
    }

    /// The one place that knows the signing order: `signedFields` and `signedMessage` are both built
    /// from it (the message without an array of field strings in between, as it is built per postback).
    private func forEachSignedField(omittingZeroSourceAppID: Bool, _ body: (_ name: String, _ value: String) -> Void) {
        if version.hasSignedVersion { body("version", versionField ?? version.rawValue) }
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
    package func signedMessage(omittingZeroSourceAppID: Bool = false) -> [UInt8] {
        var message: [UInt8] = []
        // A 4.0 message with every field is about 200 bytes: room for it, so it never grows by copying.
        message.reserveCapacity(320)
        var isFirst = true
        forEachSignedField(omittingZeroSourceAppID: omittingZeroSourceAppID) { _, value in
            if !isFirst { message.append(contentsOf: Self.separator) }
            isFirst = false
            message.append(contentsOf: value.utf8)
        }
        return message
    }

    /// Joins values with U+2063, as Apple does.
    package static func join(_ values: [String]) -> [UInt8] {
        var message: [UInt8] = []
        message.reserveCapacity(values.reduce(0) { $0 + $1.utf8.count + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { message.append(contentsOf: separator) }
            message.append(contentsOf: value.utf8)
        }
        return message
    }

    /// U+2063 INVISIBLE SEPARATOR in UTF-8.
    package static let separator: [UInt8] = [0xE2, 0x81, 0xA3]
}
