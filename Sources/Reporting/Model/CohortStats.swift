import AggregateSchema

/// Cost and return of a set of install cohorts (rows of `campaign_cohort_daily`): one campaign's, a
/// week's, or the range's. Amounts are kept per currency and never added across currencies; a ROAS
/// is the revenue estimate through a window divided by the spend of the same rows, in one currency,
/// and it remembers the least mature cohort it was made from, so an open cohort's return is never
/// shown as final.
struct CohortStats {
    /// A ROAS of one window whose revenue is in one currency.
    struct ROASKey: Hashable, Comparable {
        let revenueCurrency: String
        /// 0, 1, 2 for windows 1, 2 (cumulative) and 3 (cumulative).
        let window: Int

        static func < (lhs: ROASKey, rhs: ROASKey) -> Bool {
            (lhs.revenueCurrency, lhs.window) < (rhs.revenueCurrency, rhs.window)
        }
    }

    /// Revenue and spend of the cohorts whose ROAS column was filled, and the least mature of them.
    struct ROASSum {
        var revenue = Money.zero
        var spend = Money.zero
        var cohorts = 0
        var weakest = CohortStatus.final

        /// True when every cohort behind the figure is `final`: nothing can be added to it.
        var isFinal: Bool { weakest == .final }

        mutating func add(revenue addedRevenue: Money, spend addedSpend: Money, status: CohortStatus) throws(ReportError) {
            guard let newRevenue = revenue.plus(addedRevenue), let newSpend = spend.plus(addedSpend) else {
                throw .overflow("ROAS sum overflows 64 bits")
            }
            revenue = newRevenue
            spend = newSpend
            cohorts += 1
            weakest = min(weakest, status)
        }

        mutating func add(_ other: ROASSum) throws(ReportError) {
            guard let newRevenue = revenue.plus(other.revenue), let newSpend = spend.plus(other.spend) else {
                throw .overflow("ROAS sum overflows 64 bits")
            }
            revenue = newRevenue
            spend = newSpend
            cohorts += other.cohorts
            weakest = min(weakest, other.weakest)
        }
    }

    /// The modeled return of one revenue currency's cohorts with a ROAS and modeled columns
    /// (docs/modeling.md): their measured revenue through window 3, the null-value model's part with the
    /// variance parts that add up by the documented rule, and their spend. Never part of `roas`.
    struct ModeledROAS {
        var measured = Money.zero
        var spend = Money.zero
        var modeled = ModeledRevenue()
        var weakest = CohortStatus.final

        var isFinal: Bool { weakest == .final }

        mutating func add(_ other: ModeledROAS) throws(ReportError) {
            guard let newMeasured = measured.plus(other.measured), let newSpend = spend.plus(other.spend) else {
                throw .overflow("modeled ROAS sum overflows 64 bits")
            }
            measured = newMeasured
            spend = newSpend
            try modeled.add(other.modeled)
            weakest = min(weakest, other.weakest)
        }

        /// Modeled revenue ÷ spend, with the 90% interval of the modeled revenue ÷ the same spend.
        var ratios: (estimate: Money, low: Money, high: Money)? { modeled.total(measured: measured) }
    }

    static let windows = 3

    /// Installs of every cohort (with spend or without).
    var installs = 0
    var cohorts = 0
    /// Spend per currency (the currency `spend` is in: `CohortRecord.spendAmount`).
    var spend: [String: Money] = [:]
    /// Installs of the cohorts with spend in that currency: CPI's divisor.
    var installsWithSpend: [String: Int] = [:]
    /// Cohorts with spend, by `cohort_status`.
    var statusesWithSpend: [CohortStatus: Int] = [:]
    var roas: [ROASKey: ROASSum] = [:]
    /// Cohorts with spend whose ROAS the table left empty, by `roas_note` and the currencies it names.
    var withoutROAS: [ROASExclusion: Int] = [:]
    /// Per revenue currency: the modeled return of the cohorts whose window-3 ROAS and modeled columns are filled.
    var modeledROAS: [String: ModeledROAS] = [:]

    /// Spend was imported for these cohorts (an amount, or currencies that could not be added).
    var hasSpend: Bool { !spend.isEmpty || !withoutROAS.isEmpty }

    /// The least mature cohort with spend.
    var weakestStatusWithSpend: CohortStatus? { statusesWithSpend.keys.min() }

    /// The last window with a ROAS, per revenue currency: the return to date.
    var latestROAS: [(currency: String, window: Int, sum: ROASSum)] {
        let currencies = Set(roas.keys.map(\.revenueCurrency)).sorted()
        return currencies.compactMap { currency in
            for window in (0..<Self.windows).reversed() {
                if let sum = roas[ROASKey(revenueCurrency: currency, window: window)] { return (currency, window, sum) }
            }
            return nil
        }
    }

    /// The return to date in the currency with the most spend behind it: what campaigns are ranked by.
    var rankingROAS: ROASSum? {
        latestROAS.max { lhs, rhs in
            lhs.sum.spend != rhs.sum.spend ? lhs.sum.spend < rhs.sum.spend : lhs.currency > rhs.currency
        }?.sum
    }

    mutating func add(_ record: CohortRecord) throws(ReportError) {
        installs += record.installs
        cohorts += 1
        let spent = record.spendAmount
        if let (amount, currency) = spent {
            guard let sum = spend[currency, default: .zero].plus(amount) else { throw .overflow("spend sum overflows 64 bits") }
            spend[currency] = sum
            installsWithSpend[currency, default: 0] += record.installs
        }
        guard spent != nil || record.roasNote == .mixedSpendCurrencies else { return }
        statusesWithSpend[record.status, default: 0] += 1
        var filled = false
        if let (amount, currency) = spent, let revenueCurrency = record.revenueCurrency, currency == revenueCurrency {
            for window in 0..<Self.windows {
                guard record.roas[window] != nil, let revenue = record.cumulativeRevenue[window] else { continue }
                try roas[ROASKey(revenueCurrency: revenueCurrency, window: window), default: ROASSum()].add(
                    revenue: revenue, spend: amount, status: record.status)
                filled = true
            }
            if record.roas[2] != nil, let revenue = record.cumulativeRevenue[2], let modeled = record.modeledNullEstimate {
                var entry = modeledROAS[revenueCurrency, default: ModeledROAS()]
                guard let newMeasured = entry.measured.plus(revenue), let newSpend = entry.spend.plus(amount) else {
                    throw .overflow("modeled ROAS sum overflows 64 bits")
                }
                entry.measured = newMeasured
                entry.spend = newSpend
                try entry.modeled.add(cohort: record, estimate: modeled)
                entry.weakest = min(entry.weakest, record.status)
                modeledROAS[revenueCurrency] = entry
            }
        }
        if !filled {
            let exclusion = ROASExclusion(
                note: record.roasNote, spendCurrency: record.spendAmount?.currency ?? record.spendCurrency ?? "",
                revenueCurrency: record.revenueCurrency ?? "")
            withoutROAS[exclusion, default: 0] += 1
        }
    }

    /// Adds another set's figures (a week, the "other campaigns" row, the total).
    mutating func add(_ other: CohortStats) throws(ReportError) {
        installs += other.installs
        cohorts += other.cohorts
        for (currency, amount) in other.spend {
            guard let sum = spend[currency, default: .zero].plus(amount) else { throw .overflow("spend sum overflows 64 bits") }
            spend[currency] = sum
        }
        for (currency, count) in other.installsWithSpend { installsWithSpend[currency, default: 0] += count }
        for (status, count) in other.statusesWithSpend { statusesWithSpend[status, default: 0] += count }
        for (key, sum) in other.roas { try roas[key, default: ROASSum()].add(sum) }
        for (exclusion, count) in other.withoutROAS { withoutROAS[exclusion, default: 0] += count }
        for (currency, entry) in other.modeledROAS { try modeledROAS[currency, default: ModeledROAS()].add(entry) }
    }
}

/// Why a cohort with spend has no ROAS, with the currencies that explain it.
struct ROASExclusion: Hashable, Comparable {
    /// Nil when the row's ROAS is empty without a note, or given for spend and revenue this page
    /// cannot tell to be in one currency: it is not divided here either.
    let note: ROASNote?
    let spendCurrency: String
    let revenueCurrency: String

    /// What the note means, in a reader's words: `no rate for EUR→USD`.
    var meaning: String {
        guard let note else {
            return "spend in \(spendCurrency.isEmpty ? "?" : spendCurrency), revenue in "
                + (revenueCurrency.isEmpty ? "?" : revenueCurrency)
        }
        return switch note {
        case .noSpend: "no spend"
        case .zeroSpend: "spend 0"
        case .noRevenue: "no revenue decoded"
        case .currencyMismatch:
            "no rate for \(spendCurrency.isEmpty ? "?" : spendCurrency)→\(revenueCurrency.isEmpty ? "?" : revenueCurrency)"
        case .mixedRevenueCurrencies: "revenue in several currencies"
        case .mixedSpendCurrencies: "spend in several currencies"
        }
    }

    static func < (lhs: ROASExclusion, rhs: ROASExclusion) -> Bool { lhs.meaning < rhs.meaning }
}

/// What networks said they delivered (`reported_installs`) beside the installs Apple signed, over
/// the same cohort rows: only rows with a claim count.
struct ClaimCounts {
    var reported = 0
    var signed = 0
    var cohorts = 0

    mutating func add(_ record: CohortRecord) {
        guard let claimed = record.reportedInstalls else { return }
        reported += claimed
        signed += record.installs
        cohorts += 1
    }

    /// The rule of the first screen's warning: the network claims more than 5% more installs than
    /// Apple signed (integers, no rounding: `reported × 100 > signed × 105`).
    var exceedsSigned: Bool { reported * 100 > signed * 105 }
}
