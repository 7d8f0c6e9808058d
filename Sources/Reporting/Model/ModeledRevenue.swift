import AggregateSchema

/// What the null-value model says of a set of `campaign_daily` rows (docs/modeling.md): the modeled
/// value of their null postbacks, with the variance parts that add up by the documented rule, kept
/// apart from every measured figure. The page shows it beside the measured revenue, labelled modeled.
struct ModeledRevenue {
    /// A campaign (ad network, source identifier, campaign ID) in a stratum (app, currency, window,
    /// conversion type: re-engagement, else install): the unit whose rows share one mean's uncertainty.
    struct Unit: Hashable {
        var appID: String?
        var currency: String?
        var adNetworkID: String?
        var sourceIdentifier: String?
        var campaignID: String?
        var window: Int
        var conversionType: String?
    }

    /// Σ `modeled_null_revenue_est` of the modeled rows.
    var modeledNull = Money.zero
    var valuesVariance = 0.0
    /// Σ `modeled_null_log_p_zero`: the log of the chance that every modeled null postback is worth 0
    /// (−∞ when a row has no such column, from a file published before the model wrote it).
    var logPZero = 0.0
    /// Σ `modeled_null_mean_sd` per campaign and stratum.
    var meanSD: [Unit: Double] = [:]
    /// Null postbacks of modeled rows, and of rows the model had too little data for.
    var modeledNulls = 0
    var unmodeledNulls = 0

    /// Adds a winning row (measured or null) of one currency.
    mutating func add(_ record: CampaignDailyRecord) throws(ReportError) {
        if record.modeledNote != nil {
            unmodeledNulls += record.nullValues
            return
        }
        guard let estimate = record.modeledNullEstimate else { return }
        guard let sum = modeledNull.plus(estimate) else { throw .overflow("modeled revenue overflows 64 bits") }
        modeledNull = sum
        modeledNulls += record.nullValues
        valuesVariance += record.modeledValuesVariance ?? 0
        logPZero += record.modeledLogPZero ?? -.infinity
        let unit = Unit(
            appID: record.appID, currency: record.currency, adNetworkID: record.adNetworkID,
            sourceIdentifier: record.sourceIdentifier, campaignID: record.campaignID, window: record.sequenceIndex,
            conversionType: record.conversionType == "re-engagement" ? "re-engagement" : "install")
        meanSD[unit, default: 0] += record.modeledMeanSD ?? 0
    }

    /// Adds a cohort row's modeled columns: its mean part is its campaign's (the cohort key stands for
    /// the model's campaign; windows and conversion types are already added up within the row).
    mutating func add(cohort record: CohortRecord, estimate: Money) throws(ReportError) {
        guard let sum = modeledNull.plus(estimate) else { throw .overflow("modeled revenue overflows 64 bits") }
        modeledNull = sum
        valuesVariance += record.modeledValuesVariance ?? 0
        logPZero += record.modeledLogPZero ?? -.infinity
        let unit = Unit(
            appID: record.appID, currency: record.revenueCurrency, adNetworkID: record.adNetworkID,
            sourceIdentifier: record.campaignKey.name, window: 0, conversionType: nil)
        meanSD[unit, default: 0] += record.modeledMeanSD ?? 0
    }

    mutating func add(_ other: ModeledRevenue) throws(ReportError) {
        guard let sum = modeledNull.plus(other.modeledNull) else { throw .overflow("modeled revenue overflows 64 bits") }
        modeledNull = sum
        valuesVariance += other.valuesVariance
        logPZero += other.logPZero
        for (unit, sd) in other.meanSD { meanSD[unit, default: 0] += sd }
        modeledNulls += other.modeledNulls
        unmodeledNulls += other.unmodeledNulls
    }

    /// Whether any row of the set was modeled.
    var isModeled: Bool { !meanSD.isEmpty }

    /// The null part's variance: the rows' own parts plus, per campaign and stratum, its mean part squared.
    var variance: Double { valuesVariance + meanSD.values.reduce(0) { $0 + $1 * $1 } }

    /// `measured` plus the modeled null values, with the 90% interval of that sum (the measured part is
    /// known; the modeled part's interval is the gamma of its mean and variance, its low end 0 when the
    /// chance that every modeled null postback is worth 0 is at least 5%).
    func total(measured: Money) -> (estimate: Money, low: Money, high: Money)? {
        let (_, low, high) = NullValueModel.interval(
            mean: Double(modeledNull.micros) / 1e6, variance: variance, logPZero: logPZero)
        func micros(_ value: Double) -> Int64 { Int64((value * 1e6).rounded()) }
        guard let estimate = measured.plus(modeledNull), let lowSum = measured.plus(Money(micros: micros(low))),
            let highSum = measured.plus(Money(micros: micros(high)))
        else { return nil }
        return (estimate, lowSum, highSum)
    }
}
