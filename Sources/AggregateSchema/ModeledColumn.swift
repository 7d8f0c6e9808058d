/// The columns the null-value model appends to `campaign_daily` (and, empty, to
/// `campaign_daily_development`), in file order after every measured column (docs/modeling.md).
package enum ModeledColumn: String, CaseIterable, Sendable {
    case nullRevenueEst = "modeled_null_revenue_est"
    case nullRevenueLow = "modeled_null_revenue_low"
    case nullRevenueHigh = "modeled_null_revenue_high"
    /// `revenue_est_sum` + `modeled_null_revenue_est`.
    case revenueEst = "modeled_revenue_est"
    /// k · σ²: the individual values' part of the variance, independent between rows.
    case nullValuesVar = "modeled_null_values_var"
    /// k · √V: the campaign mean's part, fully correlated between rows of a campaign and stratum.
    case nullMeanSD = "modeled_null_mean_sd"
    /// k · ln(p0): the log of the chance that all k null postbacks are worth 0 (summed over rows).
    case nullLogPZero = "modeled_null_log_p_zero"
    /// Why a row's modeled columns are empty (too little data); empty on modeled rows.
    case note = "modeled_note"

    /// How a total of rows (an install-date cohort's, docs/modeling.md "Adding rows up") gets the column.
    package enum Total: Sendable {
        /// The rows' amounts added exactly.
        case summedAmount
        /// Recomputed from the summed estimate and variance parts.
        case interval
        /// The total's measured revenue plus its modeled null revenue.
        case measuredPlusModeled
        /// The rows' values added (a part of the variance, or another additive figure).
        case summed
        /// Why the total is empty: any contributing row's reason.
        case note
    }

    package var total: Total {
        switch self {
        case .nullRevenueEst: return .summedAmount
        case .nullRevenueLow, .nullRevenueHigh: return .interval
        case .revenueEst: return .measuredPlusModeled
        case .nullValuesVar, .nullMeanSD, .nullLogPZero: return .summed
        case .note: return .note
        }
    }

    /// The columns a total adds up as numbers (`Total.summed`), in file order.
    package static let summed = allCases.filter { $0.total == .summed }

    package var type: ColumnType {
        switch self {
        case .nullRevenueEst, .nullRevenueLow, .nullRevenueHigh, .revenueEst: return .amount
        case .nullValuesVar, .nullMeanSD, .nullLogPZero: return .double
        case .note: return .string
        }
    }
}
