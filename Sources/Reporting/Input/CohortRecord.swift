import AggregateSchema
import Basics

/// One row of `campaign_cohort_daily` (or `campaign_cohort_daily_development`): an app's campaign
/// at one ad network, for the installs of one estimated install date, with its spend and return
/// (docs/aggregate.md, "campaign_cohort_daily"). Columns are found by name in the header, as for the
/// day tables: a file from a newer `postback` that appends columns still reads.
struct CohortRecord {
    /// The estimated install date: the partition's `dt`.
    var installDay: UTCDay
    var appID: String?
    var adNetworkID: String?
    var campaignID: String?
    var sourceIdentifier: String?
    var campaign: String?
    var status: CohortStatus
    /// Nil when the row has no spend (or `spend` is empty because its currencies could not be added).
    var spend: Money?
    var spendCurrency: String?
    /// Set when `spend` was converted into `revenueCurrency` with `aggregate --fx`: the rate, as text.
    var spendFXRate: String?
    var reportedInstalls: Int?
    var installs: Int
    var revenueCurrency: String?
    /// `revenue_est_w1`, `revenue_est_cum_w2`, `revenue_est_cum_w3`: revenue through each window.
    var cumulativeRevenue: [Money?]
    var cpi: Money?
    /// `roas_w1` … `roas_w3` in millionths (the table's six decimals); nil when `roasNote` says why.
    var roas: [Int64?]
    var roasNote: ROASNote?
    /// The null-value model's columns (docs/modeling.md), nil when empty or absent (a cohort published
    /// before the model): `modeled_null_revenue_est`, `modeled_null_values_var`, `modeled_null_mean_sd`,
    /// `modeled_null_log_p_zero`.
    var modeledNullEstimate: Money? = nil
    var modeledValuesVariance: Double? = nil
    var modeledMeanSD: Double? = nil
    var modeledLogPZero: Double? = nil

    /// The key the cohort table gives a campaign, named as the day tables' campaigns are.
    var campaignKey: CampaignKey {
        CampaignKey(
            appID: appID, adNetworkID: adNetworkID, campaign: campaign, campaignID: campaignID,
            sourceIdentifier: sourceIdentifier)
    }

    /// The currency `spend` is in: the revenue's when the job converted it with an `--fx` rate
    /// (`spend_fx_rate` set: "the spend's millionths times the rate"), else `spend_currency`.
    /// Nil without spend.
    var spendAmount: (amount: Money, currency: String)? {
        guard let spend else { return nil }
        if spendFXRate != nil, let revenueCurrency { return (spend, revenueCurrency) }
        return (spend, spendCurrency ?? "")
    }

    /// The columns the report reads, by their declarations in Aggregation (`CohortColumn`).
    enum Column {
        static let appID = CohortColumn.appID.rawValue
        static let adNetworkID = CohortColumn.adNetworkID.rawValue
        static let campaignID = CohortColumn.campaignID.rawValue
        static let sourceIdentifier = CohortColumn.sourceIdentifier.rawValue
        static let campaign = CohortColumn.campaign.rawValue
        static let status = CohortColumn.cohortStatus.rawValue
        static let spend = CohortColumn.spend.rawValue
        static let spendCurrency = CohortColumn.spendCurrency.rawValue
        static let spendFXRate = CohortColumn.spendFXRate.rawValue
        static let reportedInstalls = CohortColumn.reportedInstalls.rawValue
        static let installs = CohortColumn.installs.rawValue
        static let revenueCurrency = CohortColumn.revenueCurrency.rawValue
        static let cumulativeRevenue = [CohortColumn.revenueEstW1, .revenueEstCumW2, .revenueEstCumW3].map(\.rawValue)
        static let cpi = CohortColumn.cpi.rawValue
        static let roas = [CohortColumn.roasW1, .roasW2, .roasW3].map(\.rawValue)
        static let roasNote = CohortColumn.roasNote.rawValue

        static let required =
            [
                appID, adNetworkID, campaignID, sourceIdentifier, campaign, status, spend, spendCurrency, spendFXRate,
                reportedInstalls, installs, revenueCurrency,
            ] + cumulativeRevenue + [cpi] + roas + [roasNote]
    }

    /// Where each column the report reads sits in one file.
    struct Layout {
        private let indices: [String: Int]
        let columnCount: Int

        init(header: [String?], path: String) throws(ReportError) {
            var indices: [String: Int] = [:]
            for (index, name) in header.enumerated() {
                guard let name else { throw .malformed(path: path, line: 1, reason: "empty column name in the header") }
                indices[name] = index
            }
            let missing = Column.required.filter { indices[$0] == nil }
            guard missing.isEmpty else {
                throw .malformed(
                    path: path, line: 1, reason: "not a campaign_cohort_daily table: no column \(missing.joined(separator: ", "))"
                )
            }
            self.indices = indices
            columnCount = header.count
        }

        func record(_ fields: [String?], installDay: UTCDay, path: String, line: Int) throws(ReportError) -> CohortRecord {
            guard fields.count == columnCount else {
                throw .malformed(path: path, line: line, reason: "\(fields.count) fields, the header has \(columnCount)")
            }
            func text(_ column: String) -> String? { indices[column].flatMap { fields[$0] } }
            func bad(_ column: String, _ expected: String) -> ReportError {
                .malformed(path: path, line: line, reason: "\(column) is '\(text(column) ?? "")', expected \(expected)")
            }
            func count(_ column: String) throws(ReportError) -> Int? {
                guard let value = text(column) else { return nil }
                guard let number = Int(value), number >= 0 else { throw bad(column, "a count") }
                return number
            }
            func money(_ column: String) throws(ReportError) -> Money? {
                guard let value = text(column) else { return nil }
                guard let amount = Money(decimal: value) else { throw bad(column, "an amount") }
                return amount
            }
            func double(_ column: String) throws(ReportError) -> Double? {
                guard let value = text(column) else { return nil }
                guard let number = Double(value), number.isFinite else { throw bad(column, "a number") }
                return number
            }
            guard let statusText = text(Column.status), let status = CohortStatus(rawValue: statusText) else {
                throw bad(Column.status, "open, window-1-final, window-2-final or final")
            }
            var note: ROASNote? = nil
            if let value = text(Column.roasNote) {
                guard let parsed = ROASNote(rawValue: value) else {
                    throw bad(Column.roasNote, ROASNote.allCases.map(\.rawValue).joined(separator: ", "))
                }
                note = parsed
            }
            var roas: [Int64?] = []
            for column in Column.roas { roas.append(try money(column)?.micros) }
            var revenue: [Money?] = []
            for column in Column.cumulativeRevenue { revenue.append(try money(column)) }
            return CohortRecord(
                installDay: installDay, appID: text(Column.appID), adNetworkID: text(Column.adNetworkID),
                campaignID: text(Column.campaignID), sourceIdentifier: text(Column.sourceIdentifier),
                campaign: text(Column.campaign), status: status, spend: try money(Column.spend),
                spendCurrency: text(Column.spendCurrency), spendFXRate: text(Column.spendFXRate),
                reportedInstalls: try count(Column.reportedInstalls), installs: try count(Column.installs) ?? 0,
                revenueCurrency: text(Column.revenueCurrency), cumulativeRevenue: revenue, cpi: try money(Column.cpi),
                roas: roas, roasNote: note, modeledNullEstimate: try money(ModeledColumn.nullRevenueEst.rawValue),
                modeledValuesVariance: try double(ModeledColumn.nullValuesVar.rawValue),
                modeledMeanSD: try double(ModeledColumn.nullMeanSD.rawValue),
                modeledLogPZero: try double(ModeledColumn.nullLogPZero.rawValue))
        }
    }
}
