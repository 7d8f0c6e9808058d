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
        let app = record.appID ?? "unknown app"
        let network = record.adNetworkID ?? "unknown network"
        if let campaign = record.campaign, !campaign.isEmpty {
            self.init(appID: app, adNetworkID: network, name: campaign, isDecoded: true)
        } else if let id = record.campaignID {
            self.init(appID: app, adNetworkID: network, name: "campaign id \(id)", isDecoded: false)
        } else if let source = record.sourceIdentifier {
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
