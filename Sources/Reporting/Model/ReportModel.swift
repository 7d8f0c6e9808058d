import Basics
import Postbacks

/// The figures of a report, summed from the days' `campaign_daily` rows and manifests.
///
/// Production postbacks (the table's `postbacks` and the columns derived from it) are the headline;
/// development postbacks and rejected records are summed apart, exactly as the table keeps them.
/// Dictionaries are only ever read through sorted keys, so the page does not depend on hashing order.
struct ReportModel {
    let from: UTCDay
    let to: UTCDay

    /// Days whose aggregates were read, ascending.
    var days: [UTCDay] = []
    /// Days with no published partition.
    var missingDays: [UTCDay] = []
    /// Published as explicitly empty (no spool): unknown, shown as gaps like missing days.
    var emptyDays: [UTCDay] = []
    /// Aggregated before the day was over: included, but named on the page.
    var partialDays: [UTCDay] = []
    /// Days drawn as gaps: no aggregates, no spool, or aggregates that could not be trusted.
    var unavailableDays: Set<UTCDay> { Set(missingDays + emptyDays + leftOutDays.map(\.day)) }
    /// Days with a partition the report could not trust, and why.
    var leftOutDays: [(day: UTCDay, reason: String)] = []

    var totals = NetworkDayCounts()
    var revenueByCurrency: [String: RevenueSum] = [:]
    var networkDays: [String: [UTCDay: NetworkDayCounts]] = [:]
    var networkTotals: [String: NetworkDayCounts] = [:]
    var campaigns: [CampaignKey: CampaignStats] = [:]
    /// Production counts per day (all networks), and revenue per currency and day, for the trend.
    var dayTotals: [UTCDay: NetworkDayCounts] = [:]
    var dayRevenue: [String: [UTCDay: RevenueSum]] = [:]
    /// Production counts by `country_code`; postbacks without one are counted apart.
    var countries: [String: NetworkDayCounts] = [:]
    var withoutCountry = NetworkDayCounts()

    var developmentPostbacks = 0
    var developmentByNetwork: [String: Int] = [:]
    var rejectedPostbacks = 0
    /// Rejected records by the ad network they claim (attacker-influenced, like everything rejected).
    var rejectedByClaimedNetwork: [String: Int] = [:]
    var rejectedByStatus: [String: Int] = [:]
    var rejectedReasons: [String: Int] = [:]
    /// Rejected records whose reason a manifest did not list (it lists a day's 50 most frequent).
    var rejectedUnlisted = 0
    /// Quarantined postbacks (manifests): reason, field and value → postbacks. Never in the headline.
    var quarantined: [String: Int] = [:]
    var conflicts = ConflictCounts()

    /// Later copies not counted again: the same day's and earlier days' (from the manifests; the
    /// table's `duplicates_dropped` has only the former).
    var duplicatesDropped = 0
    var corruptLines = 0
    var tornTails = 0
    var tools: Set<String> = []
    var schemaIDs: Set<String> = []
    var appIDs: Set<String> = []

    init(from: UTCDay, to: UTCDay) {
        self.from = from
        self.to = to
    }

    /// Every day of the requested range, ascending.
    var rangeDays: [UTCDay] { (0...(to.daysSinceEpoch - from.daysSinceEpoch)).map { from.adding(days: $0) } }

    /// Ad networks with production postbacks, most postbacks first.
    var networksByVolume: [String] {
        networkTotals.keys.sorted { lhs, rhs in
            let (left, right) = (networkTotals[lhs]!.postbacks, networkTotals[rhs]!.postbacks)
            return left != right ? left > right : lhs < rhs
        }
    }

    /// Campaigns with production postbacks, most postbacks first.
    var campaignsByVolume: [CampaignKey] {
        campaigns.keys.sorted { lhs, rhs in
            let (left, right) = (campaigns[lhs]!.counts.postbacks, campaigns[rhs]!.counts.postbacks)
            return left != right ? left > right : lhs < rhs
        }
    }

    mutating func add(_ record: CampaignDailyRecord, day: UTCDay) throws(ReportError) {
        if record.rejected > 0 {
            rejectedPostbacks += record.rejected
            rejectedByClaimedNetwork[record.adNetworkID ?? "", default: 0] += record.rejected
        }
        if record.development > 0 {
            developmentPostbacks += record.development
            developmentByNetwork[record.adNetworkID ?? "", default: 0] += record.development
        }
        guard record.postbacks > 0 else { return }
        let network = record.adNetworkID ?? ""
        totals.add(record)
        networkDays[network, default: [:]][day, default: NetworkDayCounts()].add(record)
        networkTotals[network, default: NetworkDayCounts()].add(record)
        if let app = record.appID { appIDs.insert(app) }
        try campaigns[CampaignKey(record), default: CampaignStats()].add(record)
        dayTotals[day, default: NetworkDayCounts()].add(record)
        if let country = record.countryCode {
            countries[country, default: NetworkDayCounts()].add(record)
        } else {
            withoutCountry.add(record)
        }
        if let kind = record.cvKind, kind != .nonWinning {
            try revenueByCurrency[record.currency ?? "", default: RevenueSum()].add(record)
            try dayRevenue[record.currency ?? "", default: [:]][day, default: RevenueSum()].add(record)
        }
    }

    mutating func add(_ manifest: DayManifest) {
        tools.insert(manifest.tool)
        schemaIDs.formUnion(manifest.schemaIDs)
        duplicatesDropped += manifest.duplicatesSameDay + manifest.duplicatesOfEarlierDays
        corruptLines += manifest.corruptLines
        tornTails += manifest.tornTails
        for (status, count) in manifest.rejectedByStatus { rejectedByStatus[status, default: 0] += count }
        var listed = 0
        for (reason, count) in manifest.rejectedReasons {
            rejectedReasons[reason, default: 0] += count
            listed += count
        }
        rejectedUnlisted += max(0, manifest.rejectedPostbacks - listed)
        conflicts.add(manifest.conflicts)
        for row in manifest.quarantined {
            quarantined["\(row.reason)\u{1F}\(row.field)\u{1F}\(row.raw)", default: 0] += row.postbacks
        }
    }
}
