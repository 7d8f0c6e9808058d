import AggregateSchema

/// Everything the report shows about one campaign (or a sum of campaigns): its volume, how its
/// conversion values are distributed, and its revenue per currency and conversion window.
struct CampaignStats {
    /// Revenue is kept apart per currency (amounts of two currencies are never added) and per
    /// postback window (windows may overlap: docs/aggregate.md warns against summing them).
    struct RevenueKey: Hashable, Comparable {
        /// Empty for postbacks that had no schema (their value is unknown).
        let currency: String
        let window: Int

        static func < (lhs: RevenueKey, rhs: RevenueKey) -> Bool { (lhs.currency, lhs.window) < (rhs.currency, rhs.window) }
    }

    static let windows = 3

    var counts = NetworkDayCounts()
    /// Postbacks by fine value 0–63 (window 0 only: Apple sends fine values in the first postback).
    var fine = [Int](repeating: 0, count: 64)
    /// The schema labels seen for each fine value.
    var fineLabels: [Int: Set<String>] = [:]
    /// Postbacks by window and coarse level (low, medium, high).
    var coarse = [[Int]](repeating: [0, 0, 0], count: windows)
    var coarseLabels: [[Set<String>]] = [[Set<String>]](repeating: [[], [], []], count: windows)
    var revenue: [RevenueKey: RevenueSum] = [:]
    /// Revenue to date per currency (empty: no schema), the page's one headline definition.
    var headline: [String: HeadlineRevenue] = [:]
    /// What the null-value model adds to it, per currency: shown beside it, never in it.
    var modeled: [String: ModeledRevenue] = [:]

    var fineTotal: Int { fine.reduce(0, +) }

    /// All estimates' micro-units added, whatever the currency: only to order campaigns that tie on installs.
    var revenueEstimateMicros: Int64 {
        revenue.values.reduce(0) { $0 &+ $1.estimate.micros }
    }

    func coarseTotal(window: Int) -> Int { coarse[window].reduce(0, +) }

    /// Adds a production row (`postbacks` > 0).
    mutating func add(_ record: CampaignDailyRecord) throws(ReportError) {
        counts.add(record)
        let window = record.sequenceIndex
        switch record.cvKind {
        case .fine?:
            if let value = record.fineValue {
                fine[value] += record.postbacks
                if let label = record.decodedLabel { fineLabels[value, default: []].insert(label) }
            }
        case .coarse?:
            if let level = record.coarseLevel {
                coarse[window][level] += record.postbacks
                if let label = record.decodedLabel { coarseLabels[window][level].insert(label) }
            }
        case .null?, .nonWinning?, nil:
            break
        }
        // Non-winning postbacks never carry a value, so they are neither known nor unknown revenue.
        guard let kind = record.cvKind, kind != .nonWinning else { return }
        try revenue[RevenueKey(currency: record.currency ?? "", window: window), default: RevenueSum()].add(record)
        try headline[record.currency ?? "", default: HeadlineRevenue()].add(record)
    }

    /// Adds another campaign's figures (for the "other campaigns" row).
    mutating func add(_ other: CampaignStats) throws(ReportError) {
        counts.add(other.counts)
        for value in 0..<64 {
            fine[value] += other.fine[value]
            if let labels = other.fineLabels[value] { fineLabels[value, default: []].formUnion(labels) }
        }
        for window in 0..<Self.windows {
            for level in 0..<3 {
                coarse[window][level] += other.coarse[window][level]
                coarseLabels[window][level].formUnion(other.coarseLabels[window][level])
            }
        }
        for (key, sum) in other.revenue { try revenue[key, default: RevenueSum()].add(sum) }
        for (currency, sum) in other.headline { try headline[currency, default: HeadlineRevenue()].add(sum) }
        for (currency, sum) in other.modeled { try modeled[currency, default: ModeledRevenue()].add(sum) }
    }
}
