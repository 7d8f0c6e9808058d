import AggregateSchema
package import PostbackStore

extension RecordColumn {
    /// The stored postback's field the column shows.
    package var field: AttributionField {
        switch self {
        case .postbackProtocol: return .postbackProtocol
        case .version: return .version
        case .appID: return .appID
        case .adNetworkID: return .adNetworkID
        case .campaignID: return .campaignID
        case .sourceIdentifier: return .sourceIdentifier
        case .sourceAppID: return .sourceAppID
        case .sourceDomain: return .sourceDomain
        case .marketplaceID: return .marketplaceID
        case .countryCode: return .countryCode
        case .interaction: return .interaction
        case .conversionType: return .conversionType
        case .sequenceIndex: return .sequenceIndex
        case .didWin: return .didWin
        case .fineValue: return .fineValue
        case .coarseValue: return .coarseValue
        }
    }
}
