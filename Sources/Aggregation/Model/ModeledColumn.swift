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

    package var sqlType: String {
        switch self {
        case .nullRevenueEst, .nullRevenueLow, .nullRevenueHigh, .revenueEst: return "DECIMAL(38, 6)"
        case .nullValuesVar, .nullMeanSD, .nullLogPZero: return "DOUBLE"
        case .note: return "VARCHAR"
        }
    }
}
