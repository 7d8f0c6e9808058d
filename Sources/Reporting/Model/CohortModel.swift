import Basics

/// Cost and return of the range's install cohorts: the rows of `campaign_cohort_daily` (or its
/// development twin) whose estimated install date is in the report's range, by campaign, by
/// install-date week, and what each network claims beside what Apple signed.
struct CohortModel {
    /// Install dates whose cohort was read.
    var days: [UTCDay] = []
    /// Install dates with a cohort file the report could not trust, and why.
    var leftOutDays: [(day: UTCDay, reason: String)] = []

    var total = CohortStats()
    var campaigns: [CampaignKey: CohortStats] = [:]
    /// By 7-day block of install dates from the range's first day (0 is the first block).
    var weeks: [Int: CohortStats] = [:]
    var claimsByNetwork: [String: ClaimCounts] = [:]
    var claimsByCampaign: [CampaignKey: ClaimCounts] = [:]

    /// Any cohort of the range has spend: the page shows spend, CPI and ROAS.
    var hasSpend: Bool { total.hasSpend }
    /// Any cohort row carries the installs a network reports.
    var hasClaims: Bool { !claimsByNetwork.isEmpty }

    mutating func add(_ record: CohortRecord, week: Int) throws(ReportError) {
        try total.add(record)
        try campaigns[record.campaignKey, default: CohortStats()].add(record)
        try weeks[week, default: CohortStats()].add(record)
        if record.reportedInstalls != nil {
            claimsByNetwork[record.adNetworkID ?? "", default: ClaimCounts()].add(record)
            claimsByCampaign[record.campaignKey, default: ClaimCounts()].add(record)
        }
    }

    /// Networks that claim more than 5% more installs than Apple signed, most claimed first.
    var networksClaimingMore: [(network: String, claims: ClaimCounts)] {
        claimsByNetwork.filter(\.value.exceedsSigned).sorted { lhs, rhs in
            lhs.value.reported != rhs.value.reported ? lhs.value.reported > rhs.value.reported : lhs.key < rhs.key
        }.map { ($0.key, $0.value) }
    }

    /// Campaigns with spend, the best return to date first (ties: more spend, then name).
    var campaignsByROAS: [CampaignKey] {
        campaigns.filter { $0.value.rankingROAS != nil }.sorted { lhs, rhs in
            let (left, right) = (lhs.value.rankingROAS!, rhs.value.rankingROAS!)
            // left.revenue / left.spend vs right.revenue / right.spend, exactly.
            let leftScaled = Int128(left.revenue.micros) * Int128(right.spend.micros)
            let rightScaled = Int128(right.revenue.micros) * Int128(left.spend.micros)
            if leftScaled != rightScaled { return leftScaled > rightScaled }
            return lhs.key < rhs.key
        }.map(\.key)
    }

    /// Campaigns with spend, most installs with spend first.
    var campaignsWithSpend: [CampaignKey] {
        campaigns.filter(\.value.hasSpend).sorted { lhs, rhs in
            let (left, right) = (lhs.value.installsWithSpend.values.reduce(0, +), rhs.value.installsWithSpend.values.reduce(0, +))
            return left != right ? left > right : lhs.key < rhs.key
        }.map(\.key)
    }
}
