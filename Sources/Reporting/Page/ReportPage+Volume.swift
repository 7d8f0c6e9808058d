import Basics
import Postbacks

/// Postbacks and installs per day, stacked by ad network.
extension ReportPage {
    func renderVolume(_ html: inout HTMLWriter) {
        section(
            &html, id: "volume", title: "Postbacks and installs per day",
            note: isDevelopment
                ? "Development postbacks (the first copy of each postback signed with a development or test key, or sent in "
                    + "test mode) by the UTC day they were received, stacked by ad network. Installs are the winning first "
                    + "postbacks of downloads. Production and rejected postbacks are not included. Shaded days have no "
                    + "aggregates: unknown, not zero."
                : "Production postbacks (the first copy of each postback signed with Apple's production keys) by the UTC day "
                    + "they were received, stacked by ad network. Installs are the winning first postbacks of downloads; "
                    + "redownloads and re-engagements are in the tables. Development and rejected postbacks are not included. "
                    + "Shaded days have no aggregates: unknown, not zero."
        ) { html in
            html.element("h3", text: "Postbacks")
            dayPanel(&html, id: "postbacks-per-day", noun: "postbacks", value: \.postbacks)
            html.element("h3", text: "Installs")
            dayPanel(&html, id: "installs-per-day", noun: "installs", value: \.installs)
        }
    }

    /// Columns of `value` per day stacked by ad network, beside a table of the same per day and network.
    /// On the development page the series and the empty state say development too.
    func dayPanel(_ html: inout HTMLWriter, id: String, noun: String, value: KeyPath<NetworkDayCounts, Int>) {
        let days = model.rangeDays
        let unavailable = model.unavailableDays
        let named = namedNetworks
        let ranked = model.networksByVolume
        let others = Array(ranked.dropFirst(named.count))
        // The table names fewer networks than the chart: a column each must fit the page's width.
        let tableNamed = Array(ranked.prefix(Self.networksInTables))
        let tableOthers = Array(ranked.dropFirst(tableNamed.count))
        func count(_ networks: [String], _ day: UTCDay) -> Int {
            networks.reduce(0) { $0 + (model.networkDays[$1]?[day]?[keyPath: value] ?? 0) }
        }
        let suffix = isDevelopment ? " (development)" : ""
        var series = zip(named, ranked).map { entry, network in
            DayColumnChart.Series(name: entry.name + suffix, style: entry.style, values: days.map { count([network], $0) })
        }
        if !others.isEmpty {
            series.append(
                DayColumnChart.Series(
                    name: "\(others.count) other networks\(suffix)", style: "s-other", values: days.map { count(others, $0) }))
        }

        // One row per day, a column per named network: a month is a month of rows, however many networks.
        var table = FiguresTable(
            id: "table-\(id)", caption: "\(noun.capitalizedFirst) per day and ad network",
            columns: [.text("Day")] + tableNamed.map { .number(Self.networkName($0)) }
                + (tableOthers.isEmpty ? [] : [.number("Other networks")]) + [.number("All networks")])
        for day in days {
            if unavailable.contains(day) {
                // Unknown, not zero: the notices above say why.
                table.add([day.description] + Array(repeating: "–", count: table.columns.count - 1))
                continue
            }
            table.add(
                [day.description] + tableNamed.map { NumberFormat.count(count([$0], day)) }
                    + (tableOthers.isEmpty ? [] : [NumberFormat.count(count(tableOthers, day))])
                    + [NumberFormat.count(count(ranked, day))])
        }
        func networkTotal(_ networks: [String]) -> Int {
            networks.reduce(0) { $0 + (model.networkTotals[$1]?[keyPath: value] ?? 0) }
        }
        table.footer =
            ["Total"] + tableNamed.map { NumberFormat.count(networkTotal([$0])) }
            + (tableOthers.isEmpty ? [] : [NumberFormat.count(networkTotal(tableOthers))])
            + [NumberFormat.count(model.totals[keyPath: value])]

        let total = model.totals[keyPath: value]
        panel(
            &html,
            chart: { html in
                guard total > 0 else {
                    emptyState(&html, "No \(environmentNoun) \(noun) in this range.")
                    return
                }
                Legend.render(series.map { ($0.style, $0.name) }, into: &html)
                DayColumnChart(
                    id: "chart-\(id)", title: "\(noun.capitalizedFirst) per day by ad network",
                    description:
                        "Stacked columns, one per day from \(model.from) to \(model.to); \(NumberFormat.count(total)) \(noun) in all.",
                    days: days, unavailable: unavailable, series: series, noun: noun
                ).render(into: &html)
            }, table: table)
    }
}

extension String {
    /// The string with its first letter in upper case ("postbacks" → "Postbacks").
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
