/// What the report calls a campaign: an app's campaign at one ad network.
///
/// The name is the campaign the schema's source-identifier map (or SKAdNetwork 1.0–3.0 campaign-id
/// map) decoded. When nothing decoded one, the raw identifier stands in (`source id 5239`,
/// `campaign id 42`), so postbacks without a map are still told apart; a truncated two-digit source
/// identifier often carries no campaign digits at all, which is why it is named as what it is.
struct CampaignKey: Hashable, Comparable {
    let appID: String
    let adNetworkID: String
    let name: String
    /// False when `name` is a raw identifier rather than a decoded campaign.
    let isDecoded: Bool

    init(appID: String, adNetworkID: String, name: String, isDecoded: Bool) {
        self.appID = appID
        self.adNetworkID = adNetworkID
        self.name = name
        self.isDecoded = isDecoded
    }

    init(_ record: CampaignDailyRecord) {
        self.init(
            appID: record.appID, adNetworkID: record.adNetworkID, campaign: record.campaign, campaignID: record.campaignID,
            sourceIdentifier: record.sourceIdentifier)
    }

    /// A table row's key columns (`campaign_daily`'s, or the cohort table's, which keys campaigns the same way).
    init(appID: String?, adNetworkID: String?, campaign: String?, campaignID: String?, sourceIdentifier: String?) {
        let app = appID ?? "unknown app"
        let network = adNetworkID ?? "unknown network"
        if let campaign, !campaign.isEmpty {
            self.init(appID: app, adNetworkID: network, name: campaign, isDecoded: true)
        } else if let id = campaignID {
            self.init(appID: app, adNetworkID: network, name: "campaign id \(id)", isDecoded: false)
        } else if let source = sourceIdentifier {
            self.init(appID: app, adNetworkID: network, name: "source id \(source)", isDecoded: false)
        } else {
            self.init(appID: app, adNetworkID: network, name: "no campaign", isDecoded: false)
        }
    }

    static func < (lhs: CampaignKey, rhs: CampaignKey) -> Bool {
        (lhs.name, lhs.adNetworkID, lhs.appID, lhs.isDecoded ? 1 : 0) < (
            rhs.name, rhs.adNetworkID, rhs.appID, rhs.isDecoded ? 1 : 0
        )
    }
}
