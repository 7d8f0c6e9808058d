/// The columns of `campaign_cohort_daily` (and its development twin), in file order
/// (docs/aggregate.md, "campaign_cohort_daily"). Appended, never renamed or reordered.
package enum CohortColumn: String, CaseIterable, Sendable {
    case appID = "app_id"
    case adNetworkID = "ad_network_id"
    case campaignID = "campaign_id"
    case sourceIdentifier = "source_identifier"
    case campaign
    case cohortStatus = "cohort_status"
    case completeThrough = "complete_through"
    case spend
    case spendCurrency = "spend_currency"
    case spendFXRate = "spend_fx_rate"
    case impressions, clicks
    case reportedInstalls = "reported_installs"
    case installs, redownloads, reengagements
    case postbacksW1 = "postbacks_w1"
    case postbacksW2 = "postbacks_w2"
    case postbacksW3 = "postbacks_w3"
    case winningPostbacks = "winning_postbacks"
    case nullValuePostbacks = "null_cv_postbacks"
    case nullValueShare = "null_cv_share"
    case revenueCurrency = "revenue_currency"
    case revenueEstW1 = "revenue_est_w1"
    case revenueMinW1 = "revenue_min_w1"
    case revenueMaxW1 = "revenue_max_w1"
    case revenueEstW2 = "revenue_est_w2"
    case revenueMinW2 = "revenue_min_w2"
    case revenueMaxW2 = "revenue_max_w2"
    case revenueEstW3 = "revenue_est_w3"
    case revenueMinW3 = "revenue_min_w3"
    case revenueMaxW3 = "revenue_max_w3"
    case revenueEstCumW2 = "revenue_est_cum_w2"
    case revenueMinCumW2 = "revenue_min_cum_w2"
    case revenueMaxCumW2 = "revenue_max_cum_w2"
    case revenueEstCumW3 = "revenue_est_cum_w3"
    case revenueMinCumW3 = "revenue_min_cum_w3"
    case revenueMaxCumW3 = "revenue_max_cum_w3"
    case cpi
    case roasW1 = "roas_w1"
    case roasW2 = "roas_w2"
    case roasW3 = "roas_w3"
    case roasNote = "roas_note"
    case reportedInstallsExcess = "reported_installs_excess"

    /// A count of postbacks: never empty (0 on a row with spend only).
    package var isCount: Bool {
        switch self {
        case .installs, .redownloads, .reengagements, .postbacksW1, .postbacksW2, .postbacksW3, .winningPostbacks,
            .nullValuePostbacks:
            return true
        case .appID, .adNetworkID, .campaignID, .sourceIdentifier, .campaign, .cohortStatus, .completeThrough, .spend,
            .spendCurrency, .spendFXRate, .impressions, .clicks, .reportedInstalls, .nullValueShare, .revenueCurrency,
            .revenueEstW1, .revenueMinW1, .revenueMaxW1, .revenueEstW2, .revenueMinW2, .revenueMaxW2, .revenueEstW3,
            .revenueMinW3, .revenueMaxW3, .revenueEstCumW2, .revenueMinCumW2, .revenueMaxCumW2, .revenueEstCumW3,
            .revenueMinCumW3, .revenueMaxCumW3, .cpi, .roasW1, .roasW2, .roasW3, .roasNote, .reportedInstallsExcess:
            return false
        }
    }

    /// The digits after the point of `spend_fx_rate` (`FXRate`).
    package static let fxRateScaleDigits = 10

    package var type: ColumnType {
        switch self {
        case .appID, .campaignID, .impressions, .clicks, .reportedInstalls, .reportedInstallsExcess: return .int64
        case .installs, .redownloads, .reengagements, .postbacksW1, .postbacksW2, .postbacksW3, .winningPostbacks,
            .nullValuePostbacks:
            return .int64
        case .adNetworkID, .sourceIdentifier, .campaign, .cohortStatus, .spendCurrency, .revenueCurrency, .roasNote:
            return .string
        case .completeThrough: return .date
        case .spendFXRate: return .decimal(precision: 38, scale: Self.fxRateScaleDigits)
        case .spend, .nullValueShare, .revenueEstW1, .revenueMinW1, .revenueMaxW1, .revenueEstW2, .revenueMinW2,
            .revenueMaxW2, .revenueEstW3, .revenueMinW3, .revenueMaxW3, .revenueEstCumW2, .revenueMinCumW2,
            .revenueMaxCumW2, .revenueEstCumW3, .revenueMinCumW3, .revenueMaxCumW3, .cpi, .roasW1, .roasW2, .roasW3:
            return .amount
        }
    }
}
