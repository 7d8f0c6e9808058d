import Basics

/// What a verified postback says, in one shape for both frameworks: the fields aggregation and
/// reports group by. Derived from the parsed postback; every value traces back to what Apple sent.
package struct Attribution: Sendable, Equatable {
    package var postbackProtocol: PostbackProtocol
    /// SKAdNetwork version; nil for AdAttributionKit.
    package var version: String?
    /// `app-id` / `advertised-item-identifier`.
    package var appID: Int64
    /// Verbatim (the case Apple signed).
    package var adNetworkID: String
    /// SKAdNetwork 1.0–3.0 `campaign-id`.
    package var campaignID: Int64?
    /// SKAdNetwork 4.0 / AdAttributionKit `source-identifier`, 2–4 digits.
    package var sourceIdentifier: String?
    /// SKAdNetwork `source-app-id` / AdAttributionKit `publisher-item-identifier`.
    package var sourceAppID: Int64?
    package var sourceDomain: String?
    package var marketplaceID: String?
    /// Unsigned.
    package var countryCode: String?
    /// `fidelity-type` (2.2+) or `ad-interaction-type`; nil when the postback does not say.
    package var interaction: AdInteraction?
    /// SKAdNetwork: `redownload` true → redownload, otherwise download.
    package var conversionType: ConversionType
    /// 0 for SKAdNetwork before 4.0, which has one postback.
    package var postbackSequenceIndex: Int
    /// nil before SKAdNetwork 3.0 (every postback then is the winner's).
    package var didWin: Bool?
    /// Unsigned.
    package var fineValue: Int?
    /// Unsigned.
    package var coarseValue: CoarseConversionValue?
    /// SKAdNetwork test scenario (`source-app-id` 0).
    package var isTestMode: Bool

    package init(
        postbackProtocol: PostbackProtocol, version: String?, appID: Int64, adNetworkID: String,
        campaignID: Int64? = nil, sourceIdentifier: String? = nil, sourceAppID: Int64? = nil,
        sourceDomain: String? = nil, marketplaceID: String? = nil, countryCode: String? = nil,
        interaction: AdInteraction? = nil, conversionType: ConversionType = .download,
        postbackSequenceIndex: Int = 0, didWin: Bool? = nil, fineValue: Int? = nil,
        coarseValue: CoarseConversionValue? = nil, isTestMode: Bool = false
    ) {
        self.postbackProtocol = postbackProtocol
        self.version = version
        self.appID = appID
        self.adNetworkID = adNetworkID
        self.campaignID = campaignID
        self.sourceIdentifier = sourceIdentifier
        self.sourceAppID = sourceAppID
        self.sourceDomain = sourceDomain
        self.marketplaceID = marketplaceID
        self.countryCode = countryCode
        self.interaction = interaction
        self.conversionType = conversionType
        self.postbackSequenceIndex = postbackSequenceIndex
        self.didWin = didWin
        self.fineValue = fineValue
        self.coarseValue = coarseValue
        self.isTestMode = isTestMode
    }

    /// The postback counts for the advertiser: a winner (or a pre-3.0 postback, which always is).
    package var isWinning: Bool { didWin != false }
}

/// Why a stored form could not be read back: a spool or conflict record, the `attribution` object
/// and the flags in it (PostbackStore reads and writes them). One shape for all of them: a closed
/// `code`, the member at fault, and the message that names it. Postbacks' one error type (a postback
/// that is not acceptable is a verdict, `PostbackRejection`, not an error).
package struct StoredFormError: Error, Sendable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        /// The line is not JSON, or not a JSON object.
        case notJSON
        /// A member the form needs is absent.
        case missing
        /// A member holds a value of the wrong type or out of range.
        case invalid
        /// A member holds a value this release does not know.
        case unknownValue
        /// The record's format is newer than this release reads.
        case newerFormat
    }

    package let code: Code
    /// The member at fault (`received_at`, `attribution.app_id`, …); nil for the line as a whole.
    package let member: String?
    package let description: String

    package init(_ code: Code, member: String?, _ description: String) {
        self.code = code
        self.member = member
        self.description = description
    }

    /// The same error found inside `member` (the stored attribution of a conflict record): its message
    /// prefixed with the member's name.
    package func inside(_ member: String) -> StoredFormError {
        StoredFormError(code, member: self.member.map { "\(member).\($0)" } ?? member, "\(member): \(description)")
    }
}

extension Postback {
    /// The normalized fields of this postback.
    package var attribution: Attribution {
        switch self {
        case .skadnetwork(let skan):
            return Attribution(
                postbackProtocol: .skadnetwork, version: skan.version.rawValue, appID: skan.appID, adNetworkID: skan.adNetworkID,
                campaignID: skan.campaignID, sourceIdentifier: skan.sourceIdentifier, sourceAppID: skan.sourceAppID,
                sourceDomain: skan.sourceDomain, countryCode: skan.countryCode,
                interaction: skan.fidelityType.flatMap { $0 == 1 ? .click : $0 == 0 ? .view : nil },
                conversionType: skan.redownload == true ? .redownload : .download,
                postbackSequenceIndex: Int(clamping: skan.postbackSequenceIndex ?? 0), didWin: skan.didWin,
                fineValue: skan.conversionValue, coarseValue: skan.coarseConversionValue, isTestMode: skan.isTestMode)
        case .adAttributionKit(let aak):
            return Attribution(
                postbackProtocol: .adattributionkit, version: nil, appID: aak.advertisedItemID, adNetworkID: aak.adNetworkID,
                sourceIdentifier: aak.sourceIdentifier, sourceAppID: aak.publisherItemID, marketplaceID: aak.marketplaceID,
                // An unknown conversion type is flagged `unrecognized`, and such postbacks are never
                // aggregated (they are quarantined); `download` here only fills the slot.
                countryCode: aak.countryCode, interaction: aak.adInteraction, conversionType: aak.conversionType ?? .download,
                postbackSequenceIndex: Int(clamping: aak.postbackSequenceIndex), didWin: aak.didWin,
                fineValue: aak.conversionValue, coarseValue: aak.coarseConversionValue)
        }
    }
}
