import Basics
import Postbacks

/// Postbacks and installs per day, stacked by ad network.
extension ReportPage {
    func renderVolume(_ html: inout HTMLWriter) {
        section(
            &html, id: "volume", title: "Postbacks and installs per day",
            note: "Production postbacks (the first copy of each postback signed with Apple's production keys) by the UTC day "
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
    /// On a development page (`labelsDevelopment`) the series and the empty state say development too.
    func dayPanel(_ html: inout HTMLWriter, id: String, noun: String, value: KeyPath<NetworkDayCounts, Int>) {
        let days = model.rangeDays
        let unavailable = model.unavailableDays
        let named = namedNetworks
        let ranked = model.networksByVolume
        let others = Array(ranked.dropFirst(named.count))
        func count(_ networks: [String], _ day: UTCDay) -> Int {
            networks.reduce(0) { $0 + (model.networkDays[$1]?[day]?[keyPath: value] ?? 0) }
        }
        let suffix = labelsDevelopment ? " (development)" : ""
        var series = zip(named, ranked).map { entry, network in
            DayColumnChart.Series(name: entry.name + suffix, style: entry.style, values: days.map { count([network], $0) })
        }
        if !others.isEmpty {
            series.append(
                DayColumnChart.Series(
                    name: "\(others.count) other networks\(suffix)", style: "s-other", values: days.map { count(others, $0) }))
        }

        // One row per day and network (long rather than wide, so many networks still fit beside the chart).
        var table = FiguresTable(
            id: "table-\(id)", caption: "\(noun.capitalizedFirst) per day and ad network",
            columns: [.text("Day"), .text("Ad network"), .number(noun.capitalizedFirst)])
        for day in days {
            if unavailable.contains(day) {
                table.add([day.description, model.emptyDays.contains(day) ? "no spool" : "no aggregates", "–"])
                continue
            }
            for network in ranked where (model.networkDays[network]?[day]?.postbacks ?? 0) > 0 {
                table.add([day.description, Self.networkName(network), NumberFormat.count(count([network], day))])
            }
            table.add([day.description, "all networks", NumberFormat.count(count(ranked, day))])
        }
        table.footer = ["Total", "all networks", NumberFormat.count(model.totals[keyPath: value])]

        let total = model.totals[keyPath: value]
        panel(
            &html,
            chart: { html in
                guard total > 0 else {
                    emptyState(&html, labelsDevelopment ? "No \(noun) in this range." : "No production \(noun) in this range.")
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
