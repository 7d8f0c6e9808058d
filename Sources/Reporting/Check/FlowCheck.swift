import AggregateSchema
package import Basics
import PostbackStore

/// `postback check`: one published day compared with each app × ad network's recent published
/// days (docs/alerts.md, "The nightly check"). It reads only complete days (manifest present, table
/// matching its checksum, not partial), as the report does.
package enum FlowCheck {
    /// A pair needs this many history days with postbacks before it is judged.
    package static let minimumHistoryDays = 7
    package static let defaultHistoryDays = 28

    /// `stopped`: no postback where the history's median is at least this.
    static let stoppedMedian = 10.0
    /// `volume-drop`: below this share of the median, and this unlikely at the median.
    static let dropShare = 0.5
    static let dropProbability = 0.001
    /// `null-share-jump`: on at least this many winners, this far above and this many times the
    /// pooled share, this many standard errors above it.
    static let nullMinimumWinners = 30
    static let nullRise = 0.20
    static let nullFactor = 1.5
    static let nullZ = 4.0
    /// `values-collapsed`: on at least this many fine values, one holds this share of them while it
    /// held at most `collapseHistoryShare` of the history's.
    static let collapseMinimumValues = 30
    static let collapseShare = 0.80
    static let collapseHistoryShare = 0.50

    package struct Request: Sendable {
        package var dataDirectory: String
        package var day: UTCDay
        package var historyDays: Int
        package var environment: ReportEnvironment

        package init(dataDirectory: String, day: UTCDay, historyDays: Int = defaultHistoryDays, environment: ReportEnvironment) {
            self.dataDirectory = dataDirectory
            self.day = day
            self.historyDays = historyDays
            self.environment = environment
        }
    }

    package struct Result: Sendable {
        package var day: UTCDay
        package var environment: ReportEnvironment
        package var findings: [FlowFinding]
        /// App × network pairs seen on the day or in its history.
        package var pairs: Int
        /// Of them, pairs with fewer than `minimumHistoryDays` history days with postbacks: not judged.
        package var pairsWithTooLittleHistory: Int
        /// Pairs silent on the day and on the last history day already, which would be `stopped` or a
        /// `volume-drop` again (reported on the day they stopped).
        package var pairsStillStopped: [FlowPair]
        /// The complete history days read.
        package var historyDays: [UTCDay]

        /// `N findings on DAY over M app × network pairs; K pairs with too little history`.
        package var summary: String {
            var text =
                "\(findings.count) finding\(findings.count == 1 ? "" : "s") on \(day) over \(pairs) app × network pair\(pairs == 1 ? "" : "s"); "
                + "\(pairsWithTooLittleHistory) pair\(pairsWithTooLittleHistory == 1 ? "" : "s") with too little history"
            if !pairsStillStopped.isEmpty {
                text += "; \(pairsStillStopped.count) still stopped since an earlier day's finding"
            }
            return text
        }
    }

    /// Why it could not run (exit 2): `ReportError`'s `notPublished`, `leftOut`, `partial`, or what the
    /// days could not be read for.
    package static func run(_ request: Request) throws -> Result {
        let loader = AggregateLoader(dataDirectory: request.dataDirectory, table: request.environment.table)
        var history = FlowHistory()
        var complete: [UTCDay] = []
        switch try loader.loadDay(request.day, into: &history) {
        case .missing: throw ReportError.notPublished(path: loader.layout.manifest(day: request.day), day: request.day)
        case .leftOut(let reason): throw ReportError.leftOut(day: request.day, reason: reason)
        case .included, .empty: break
        }
        guard !history.partialDays.contains(request.day) else { throw ReportError.partial(day: request.day) }
        for age in stride(from: request.historyDays, through: 1, by: -1) {
            let day = request.day.adding(days: -age)
            switch try loader.loadDay(day, into: &history) {
            case .included, .empty:
                if history.partialDays.contains(day) { fallthrough }
                complete.append(day)
            case .missing, .leftOut: history.days[day] = nil
            }
        }
        return judge(history, day: request.day, historyDays: complete, environment: request.environment)
    }

    /// The findings of `day` against `historyDays` (complete days, oldest first).
    static func judge(_ history: FlowHistory, day: UTCDay, historyDays: [UTCDay], environment: ReportEnvironment) -> Result {
        let today = history.days[day] ?? [:]
        var pairs = Set(today.keys)
        for past in historyDays { pairs.formUnion(history.days[past]?.keys ?? [:].keys) }
        var result = Result(
            day: day, environment: environment, findings: [], pairs: pairs.count, pairsWithTooLittleHistory: 0,
            pairsStillStopped: [], historyDays: historyDays)
        for pair in pairs.sorted() {
            // The pair's history starts on its first day with postbacks: a network that began last
            // week is judged by its days since, not by weeks of zeros before it.
            let series = historyDays.map { history.days[$0]?[pair] ?? FlowCounts() }
            guard let first = series.firstIndex(where: { $0.postbacks > 0 }) else { continue }
            let past = Array(series[first...])
            guard past.filter({ $0.postbacks > 0 }).count >= minimumHistoryDays else {
                result.pairsWithTooLittleHistory += 1
                continue
            }
            let counts = today[pair] ?? FlowCounts()
            let context = FlowFinding.Context(day: day, pair: pair, historyDays: past.count)
            if let finding = volume(counts, past: past, context: context) {
                if counts.postbacks == 0, past.last!.postbacks == 0 {
                    result.pairsStillStopped.append(pair)
                } else {
                    result.findings.append(finding)
                }
            }
            var pooled = FlowCounts()
            for counts in past { pooled.add(counts) }
            if let finding = nullShare(counts, pooled: pooled, context: context) { result.findings.append(finding) }
            if let finding = collapse(counts, pooled: pooled, context: context) { result.findings.append(finding) }
        }
        return result
    }

    /// `stopped` or `volume-drop`, against the median of the pair's days.
    static func volume(_ counts: FlowCounts, past: [FlowCounts], context: FlowFinding.Context) -> FlowFinding? {
        let median = FlowStatistics.median(past.map(\.postbacks))
        if counts.postbacks == 0, median >= stoppedMedian {
            return FlowFinding(
                context, .stopped,
                figures: [("postbacks", .count(0)), ("median", .decimal(median)), ("history_days", .count(context.historyDays))],
                text: "0 postbacks, median \(FlowFinding.format(median)) a day over \(context.historyDays) days")
        }
        guard Double(counts.postbacks) < median * dropShare else { return nil }
        let probability = FlowStatistics.poissonLowerTail(counts.postbacks, mean: median)
        guard probability < dropProbability else { return nil }
        return FlowFinding(
            context, .volumeDrop,
            figures: [
                ("postbacks", .count(counts.postbacks)), ("median", .decimal(median)),
                ("history_days", .count(context.historyDays)), ("probability", .probability(probability)),
            ],
            text:
                "\(counts.postbacks) postbacks, median \(FlowFinding.format(median)) a day over \(context.historyDays) days "
                + "(P ≤ \(FlowFinding.probability(probability)) at the median)")
    }

    /// `null-share-jump`: the day's null share against the history's pooled share.
    static func nullShare(_ counts: FlowCounts, pooled: FlowCounts, context: FlowFinding.Context) -> FlowFinding? {
        guard counts.winners >= nullMinimumWinners, pooled.winners > 0 else { return nil }
        let share = Double(counts.nullValues) / Double(counts.winners)
        let expected = Double(pooled.nullValues) / Double(pooled.winners)
        let z = FlowStatistics.binomialZ(hits: counts.nullValues, trials: counts.winners, expected: expected)
        guard share >= expected + nullRise, share >= expected * nullFactor, z >= nullZ else { return nil }
        return FlowFinding(
            context, .nullShareJump,
            figures: [
                ("winners", .count(counts.winners)), ("null_postbacks", .count(counts.nullValues)), ("share", .decimal(share)),
                ("history_share", .decimal(expected)), ("history_days", .count(context.historyDays)), ("z", .decimal(z)),
            ],
            text:
                "\(counts.nullValues) of \(counts.winners) winners without a value (\(FlowFinding.percent(share))), "
                + "\(FlowFinding.percent(expected)) over \(context.historyDays) days (z = \(FlowFinding.format(z)))")
    }

    /// `values-collapsed`: one fine value holds most of the day's while it held at most half of the history's.
    static func collapse(_ counts: FlowCounts, pooled: FlowCounts, context: FlowFinding.Context) -> FlowFinding? {
        let total = counts.fineValueCount
        let historyTotal = pooled.fineValueCount
        guard total >= collapseMinimumValues, historyTotal > 0,
            let (value, count) = counts.fineValues.max(by: { ($0.value, -$0.key) < ($1.value, -$1.key) })
        else { return nil }
        let share = Double(count) / Double(total)
        let historyShare = Double(pooled.fineValues[value] ?? 0) / Double(historyTotal)
        guard share >= collapseShare, historyShare <= collapseHistoryShare else { return nil }
        return FlowFinding(
            context, .valuesCollapsed,
            figures: [
                ("fine_values", .count(total)), ("value", .count(value)), ("value_count", .count(count)),
                ("share", .decimal(share)),
                ("history_share", .decimal(historyShare)), ("history_days", .count(context.historyDays)),
            ],
            text:
                "\(count) of \(total) fine values are \(value) (\(FlowFinding.percent(share))), "
                + "\(FlowFinding.percent(historyShare)) over \(context.historyDays) days")
    }
}
