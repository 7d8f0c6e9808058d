import Basics
import Postbacks

/// The figures of a report, summed from the days' `campaign_daily` rows and manifests.
///
/// Production postbacks (the table's `postbacks` and the columns derived from it) are the headline;
/// development postbacks and rejected records are summed apart, exactly as the table keeps them.
/// Dictionaries are only ever read through sorted keys, so the page does not depend on hashing order.
struct ReportModel: DayRecordSink {
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
    /// The nightly check's findings for the range's days (`agg/_checks`), as `postback check` prints them.
    var checkFindings: [String] = []

    var totals = NetworkDayCounts()
    /// Revenue to date per currency (`HeadlineRevenue`); the empty currency: postbacks without a schema.
    var revenueByCurrency: [String: HeadlineRevenue] = [:]
    /// The null-value model's figures beside `revenueByCurrency` (docs/modeling.md), never added into it.
    var modeledByCurrency: [String: ModeledRevenue] = [:]
    var networkDays: [String: [UTCDay: NetworkDayCounts]] = [:]
    var networkTotals: [String: NetworkDayCounts] = [:]
    var campaigns: [CampaignKey: CampaignStats] = [:]
    /// Production counts per day (all networks), and revenue per currency and day, for the trend.
    var dayTotals: [UTCDay: NetworkDayCounts] = [:]
    var dayRevenue: [String: [UTCDay: HeadlineRevenue]] = [:]
    /// Production counts by `country_code`; postbacks without one are counted apart.
    var countries: [String: NetworkDayCounts] = [:]
    var withoutCountry = NetworkDayCounts()

    var developmentPostbacks = 0
    var developmentByNetwork: [String: Int] = [:]
    /// On a development page: the production postbacks of the range, kept off its figures.
    var productionPostbacks = 0
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
    /// Spend, CPI and ROAS of the range's install cohorts (the page environment's cohort table);
    /// empty for a store without cohort tables.
    var cohorts = CohortModel()

    /// Later copies not counted again: the same day's and earlier days' (from the manifests; the
    /// table's `duplicates_dropped` has only the former).
    var duplicatesDropped = 0
    var corruptLines = 0
    var tornTails = 0
    var tools: Set<String> = []
    var schemaIDs: Set<String> = []
    var appIDs: Set<String> = []
    /// Counted postbacks of apps that no schema decoded (no revenue), by app id.
    var postbacksWithoutSchema: [String: Int] = [:]

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

    /// Campaigns with postbacks, ranked as a marketer asks: most installs first, then the largest
    /// revenue estimate, then most postbacks.
    var campaignsByInstalls: [CampaignKey] {
        let ranked = campaigns.map { key, stats in
            (key: key, installs: stats.counts.installs, revenue: stats.revenueEstimateMicros, postbacks: stats.counts.postbacks)
        }
        return ranked.sorted { lhs, rhs in
            if lhs.installs != rhs.installs { return lhs.installs > rhs.installs }
            if lhs.revenue != rhs.revenue { return lhs.revenue > rhs.revenue }
            if lhs.postbacks != rhs.postbacks { return lhs.postbacks > rhs.postbacks }
            return lhs.key < rhs.key
        }.map(\.key)
    }

    mutating func markPartial(_ day: UTCDay) { partialDays.append(day) }

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
        if let app = record.appID {
            appIDs.insert(app)
            if record.schemaID == nil { postbacksWithoutSchema[app, default: 0] += record.postbacks }
        }
        try campaigns[CampaignKey(record), default: CampaignStats()].add(record)
        dayTotals[day, default: NetworkDayCounts()].add(record)
        if let country = record.countryCode {
            countries[country, default: NetworkDayCounts()].add(record)
        } else {
            withoutCountry.add(record)
        }
        if let kind = record.cvKind, kind != .nonWinning {
            try revenueByCurrency[record.currency ?? "", default: HeadlineRevenue()].add(record)
            try dayRevenue[record.currency ?? "", default: [:]][day, default: HeadlineRevenue()].add(record)
        }
    }

    /// A `campaign_daily` row's modeled columns (the production page's rows come from the detail table,
    /// which has none): beside the measured revenue of its campaign and currency, never in it.
    mutating func addModeled(_ record: CampaignDailyRecord) throws(ReportError) {
        guard record.postbacks > 0, let kind = record.cvKind, kind != .nonWinning else { return }
        try modeledByCurrency[record.currency ?? "", default: ModeledRevenue()].add(record)
        try campaigns[CampaignKey(record), default: CampaignStats()].modeled[record.currency ?? "", default: ModeledRevenue()]
            .add(record)
    }

    /// The page's own environment: development when the model was read from
    /// `campaign_daily_development` (`adoptSideCounts` marks it).
    var environment = ReportEnvironment.production

    /// Postbacks of the other environment than the page's, which its figures leave out.
    var otherEnvironmentPostbacks: Int { environment == .production ? developmentPostbacks : productionPostbacks }

    /// A development model takes the production model's view of the store: which days are there,
    /// and the manifests' side counts (rejected, duplicates, corrupt lines, quarantine), which belong
    /// to no environment; its own figures stay its own.
    mutating func adoptSideCounts(of production: ReportModel) {
        environment = .development
        productionPostbacks = production.totals.postbacks
        developmentPostbacks = production.developmentPostbacks
        developmentByNetwork = production.developmentByNetwork
        missingDays = production.missingDays
        emptyDays = production.emptyDays
        partialDays = production.partialDays
        // A day whose production table could not be trusted is not shown from its development table either.
        let leftOut = Set(production.leftOutDays.map(\.day))
        leftOutDays = production.leftOutDays + leftOutDays.filter { !leftOut.contains($0.day) }
        days = days.filter { !leftOut.contains($0) }
        rejectedPostbacks = production.rejectedPostbacks
        rejectedByClaimedNetwork = production.rejectedByClaimedNetwork
        rejectedByStatus = production.rejectedByStatus
        rejectedReasons = production.rejectedReasons
        rejectedUnlisted = production.rejectedUnlisted
        quarantined = production.quarantined
        conflicts = production.conflicts
        duplicatesDropped = production.duplicatesDropped
        corruptLines = production.corruptLines
        tornTails = production.tornTails
        tools = production.tools
        schemaIDs = production.schemaIDs
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
