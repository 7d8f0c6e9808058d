import AggregateSchema
package import Basics
import Postbacks

/// What to report on and where to write it.
package struct ReportRequest: Sendable {
    /// The store whose `agg/` holds the aggregates (`postback aggregate --data`).
    package var dataDirectory: String
    /// The first and last day (partition `dt`, the UTC day postbacks were received), inclusive.
    package var from: UTCDay
    package var to: UTCDay
    /// The page to write, atomically.
    package var outputPath: String
    /// The page's heading; by default "Postback report" and the range.
    package var title: String?
    /// How many campaigns the per-campaign charts show by name; the rest are summed in one row.
    package var topCampaigns: Int
    /// Named in the page's footer, e.g. `postback 0.1.0`.
    package var toolVersion: String
    /// Only this app's rows (`--app ID`); the manifests' rejected reasons and side counts are the
    /// store's and are labelled as such.
    package var appID: String? = nil
    /// Whose figures the page draws (`--environment`): production postbacks (the default), or the
    /// development ones of `campaign_daily_development`, every section labelled development. The two
    /// are never added together.
    package var environment = ReportEnvironment.production
    /// The rows the page may draw from (`DataScope`, applied as rows are loaded); the store-wide side
    /// counts of the manifests only with `everything`.
    package var scope = DataScope.everything

    package static let defaultTopCampaigns = 12

    package init(
        dataDirectory: String, from: UTCDay, to: UTCDay, outputPath: String, title: String? = nil,
        topCampaigns: Int = defaultTopCampaigns, toolVersion: String
    ) {
        self.dataDirectory = dataDirectory
        self.from = from
        self.to = to
        self.outputPath = outputPath
        self.title = title
        self.topCampaigns = topCampaigns
        self.toolVersion = toolVersion
    }
}

/// The two kinds of verified postbacks a page can be about; each page shows one.
package enum ReportEnvironment: String, CaseIterable, Sendable {
    /// Signed with Apple's production keys: what is measured.
    case production
    /// Apple's development keys, `--trust-key` test keys, SKAdNetwork test mode: what a team sees
    /// while it integrates.
    case development

    /// The table whose rows the page draws.
    var table: String {
        switch self {
        case .production: AggregateTables.postbackDetailDaily
        case .development: AggregateTables.campaignDailyDevelopment
        }
    }

    /// The cohort table (by estimated install date) whose spend and return the page shows.
    var cohortTable: String {
        switch self {
        case .production: CohortLoader.production
        case .development: CohortLoader.development
        }
    }
}
