import AggregateSchema
import Basics

/// The modeled columns of one `campaign_daily` row (or of a cache group of them), as the cohorts read
/// them: absent in files published without the model.
struct ModeledParts {
    var estimate: Money?
    /// `ModeledColumn.summed`'s values, in that order.
    var sums: [Double?]
    var note: String?

    static let none = ModeledParts(estimate: nil, sums: Array(repeating: nil, count: ModeledColumn.summed.count), note: nil)

    /// A group of rows summed as SQL SUM does (empty until a value is added); the notes kept.
    mutating func add(_ other: ModeledParts) {
        if let amount = other.estimate { estimate = Money(micros: (estimate?.micros ?? 0) + amount.micros) }
        for index in sums.indices {
            if let value = other.sums[index] { sums[index] = (sums[index] ?? 0) + value }
        }
        if let reason = other.note { note = ModeledTotal.joined([note, reason]) }
    }
}

/// The modeled columns of a total of `campaign_daily` rows (a cohort row), by docs/modeling.md's sum
/// rule: estimates and variance parts summed, each model campaign's mean part (window, conversion type,
/// currency, ad network, source identifier) summed before it is squared, the interval recomputed.
struct ModeledTotal {
    /// The model's campaign and stratum within one cohort row (the app is the row's; the conversion
    /// type as the model pools it: re-engagement, else install).
    struct Campaign: Hashable {
        var window: Int
        var conversionType: String?
        var currency: String?
        var adNetworkID: String
        var sourceIdentifier: String?
        var campaignID: Int64?
    }

    private var estimate: Money?
    private var sums: [Double] = Array(repeating: 0, count: ModeledColumn.summed.count)
    private var meanSD: [Campaign: Double] = [:]
    private var notes: String?

    mutating func add(_ parts: ModeledParts, campaign: Campaign) {
        if let reason = parts.note { notes = Self.joined([notes, reason]) }
        guard let amount = parts.estimate else { return }
        estimate = Money(micros: (estimate?.micros ?? 0) + amount.micros)
        for (index, column) in ModeledColumn.summed.enumerated() {
            let value = parts.sums[index] ?? 0
            sums[index] += value
            if column == .nullMeanSD { meanSD[campaign, default: 0] += value }
        }
    }

    /// Distinct reasons, sorted, joined by "; ".
    static func joined(_ notes: [String?]) -> String {
        Set(notes.compactMap { $0 }.flatMap { $0.components(separatedBy: "; ") }).sorted().joined(separator: "; ")
    }

    /// The row's modeled fields: empty without one revenue currency or without modeled rows; empty but
    /// the note when any contributing row had too little data.
    func fields(measured: Money?, currency: String?, into csv: inout CSVLine) {
        func empty(_ count: Int) { for _ in 0..<count { csv.field(nil as String?) } }
        guard currency != nil, notes == nil, let estimate else {
            empty(ModeledColumn.allCases.count - 1)
            csv.field(currency == nil ? nil : notes)
            return
        }
        let valuesVariance = sums[ModeledColumn.summed.firstIndex(of: .nullValuesVar)!]
        // Summed in a fixed order (the campaigns sorted), so a rerun gives the same bits.
        let sorted = meanSD.sorted {
            (
                $0.key.window, $0.key.conversionType ?? "", $0.key.currency ?? "", $0.key.adNetworkID,
                $0.key.sourceIdentifier ?? "", $0.key.campaignID ?? -1
            )
                < (
                    $1.key.window, $1.key.conversionType ?? "", $1.key.currency ?? "", $1.key.adNetworkID,
                    $1.key.sourceIdentifier ?? "", $1.key.campaignID ?? -1
                )
        }
        let variance = sorted.reduce(valuesVariance) { $0 + $1.value * $1.value }
        let logPZero = sums[ModeledColumn.summed.firstIndex(of: .nullLogPZero)!]
        let (_, low, high) = NullValueModel.interval(
            mean: Double(estimate.micros) / 1e6, variance: variance, logPZero: logPZero)
        for column in ModeledColumn.allCases {
            switch column.total {
            case .summedAmount: csv.field(estimate)
            case .interval: csv.field(ModelPass.money(column == .nullRevenueLow ? low : high))
            case .measuredPlusModeled:
                if let measured {
                    csv.field(Money(micros: measured.micros + estimate.micros))
                } else {
                    csv.field(estimate.micros > 0 ? estimate : nil)
                }
            case .summed: csv.field(sums[ModeledColumn.summed.firstIndex(of: column)!].description)
            case .note: csv.field(nil as String?)
            }
        }
    }
}
