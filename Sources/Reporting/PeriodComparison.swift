import AggregateSchema

/// The dashboard's comparison of two periods' first-screen figures (`ReportFigures`): each figure of
/// this period, of the period of the same length just before, and the change between them
/// (`NumberFormat.change`). Amounts are compared per currency, never across currencies.
package enum PeriodComparison {
    package struct Row: Sendable, Equatable {
        package var figure: String
        package var current: String
        package var previous: String
        package var change: String
    }

    /// The rows: the headline counts, then per currency revenue to date, spend, cost per install and
    /// ROAS to date; a figure the period before lacks is `–` there.
    package static func rows(_ current: ReportFigures, _ previous: ReportFigures?) -> [Row] {
        func count(_ name: String, _ value: (ReportFigures.Counts) -> Int) -> Row {
            let now = value(current.totals)
            let before = previous.map { value($0.totals) }
            return Row(
                figure: name, current: NumberFormat.count(now), previous: before.map(NumberFormat.count) ?? "–",
                change: before.map { NumberFormat.change(Int64(now), from: Int64($0)) } ?? "–")
        }
        /// An amount or ratio as the figures write it (exact, or shown: `1,234.56`, `–`).
        func amount(_ name: String, _ now: String?, _ before: String?, shown: (Money) -> String) -> Row {
            let parse = { (text: String?) in text.flatMap { Money(decimal: String($0.filter { $0 != "," })) } }
            let (nowValue, beforeValue) = (parse(now), parse(before))
            return Row(
                figure: name, current: nowValue.map(shown) ?? "–", previous: beforeValue.map(shown) ?? "–",
                change: nowValue.flatMap { value in beforeValue.map { NumberFormat.change(value.micros, from: $0.micros) } }
                    ?? "–")
        }
        var rows = [
            count("Postbacks") { $0.postbacks }, count("Installs") { $0.installs },
            count("Redownloads") { $0.redownloads }, count("Re-engagements") { $0.reengagements },
            count("Non-winning") { $0.losses }, count("Null values") { $0.nullValues },
        ]
        let revenue = Set((current.revenue + (previous?.revenue ?? [])).map(\.currency)).filter { !$0.isEmpty }.sorted()
        for currency in revenue {
            rows.append(
                amount(
                    "\(HeadlineRevenue.name), \(currency)", current.revenue.first { $0.currency == currency }?.estimate,
                    previous?.revenue.first { $0.currency == currency }?.estimate, shown: NumberFormat.money))
        }
        let spent = Set((current.cost + (previous?.cost ?? [])).map(\.currency)).sorted()
        for currency in spent {
            let (now, before) = (current.cost.first { $0.currency == currency }, previous?.cost.first { $0.currency == currency })
            rows.append(amount("Spend, \(currency)", now?.spend, before?.spend, shown: NumberFormat.money))
            rows.append(
                amount("Cost per install, \(currency)", now?.costPerInstall, before?.costPerInstall, shown: NumberFormat.money))
        }
        let returned = Set((current.returns + (previous?.returns ?? [])).map(\.currency)).sorted()
        for currency in returned {
            let (now, before) = (
                current.returns.first { $0.currency == currency }, previous?.returns.first { $0.currency == currency }
            )
            rows.append(amount("ROAS to date, \(currency)", now?.roas, before?.roas, shown: NumberFormat.money))
        }
        return rows
    }
}
