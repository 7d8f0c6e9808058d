import Basics
import Postbacks

/// The two shares people watch for data quality: null conversion values and non-winning postbacks.
extension ReportPage {
    func renderNullShare(_ html: inout HTMLWriter) {
        let days = model.rangeDays
        let ranked = model.networksByVolume
        section(
            &html, id: "null-share", title: "Share of null conversion values",
            note: "A null conversion value means Apple withheld the value (the install's crowd was too small for its privacy "
                + "threshold). The install still counts; its value and revenue are unknown, which is not zero revenue. "
                + "Share = null-value postbacks ÷ winning postbacks (non-winning postbacks never carry a value). "
                + "A rising share usually means fewer installs per campaign, and so lower privacy tiers."
        ) { html in
            func point(_ networks: [String], _ day: UTCDay) -> DayLineChart.Point? {
                var counts = NetworkDayCounts()
                for network in networks { if let day = model.networkDays[network]?[day] { counts.add(day) } }
                return counts.winners > 0 ? DayLineChart.Point(part: counts.nullValues, whole: counts.winners) : nil
            }
            var series = zip(namedNetworks, ranked).map { entry, network in
                DayLineChart.Series(
                    name: entry.name, style: entry.style, points: days.map { point([network], $0) }, isDashed: false)
            }
            if ranked.count > 1 {
                series.append(
                    DayLineChart.Series(
                        name: "All networks", style: "s-all", points: days.map { point(ranked, $0) }, isDashed: true))
            }

            // One row per day: the day's null values and winners, then each named network's share.
            let named = Array(ranked.prefix(Self.networksInTables))
            var table = FiguresTable(
                id: "table-null-share", caption: "Null values per day, and the share per ad network",
                columns: [.text("Day"), .number("Null values"), .number("Winning postbacks"), .number("Share")]
                    + zip(namedNetworks, named).map { entry, _ in .number("Share, \(entry.name)") })
            func shares(_ networks: [String], _ counts: (String) -> NetworkDayCounts?) -> [String] {
                networks.map { network in
                    guard let counts = counts(network), counts.winners > 0 else { return "–" }
                    return NumberFormat.percent(counts.nullValues, of: counts.winners)
                }
            }
            for day in days {
                var counts = NetworkDayCounts()
                for network in ranked { if let day = model.networkDays[network]?[day] { counts.add(day) } }
                guard counts.postbacks > 0 else { continue }
                table.add(
                    [
                        day.description, NumberFormat.count(counts.nullValues), NumberFormat.count(counts.winners),
                        NumberFormat.percent(counts.nullValues, of: counts.winners),
                    ] + shares(named) { model.networkDays[$0]?[day] })
            }
            table.footer =
                [
                    "Total", NumberFormat.count(model.totals.nullValues), NumberFormat.count(model.totals.winners),
                    NumberFormat.percent(model.totals.nullValues, of: model.totals.winners),
                ] + shares(named) { model.networkTotals[$0] }
            panel(
                &html,
                chart: { html in
                    guard model.totals.winners > 0 else {
                        emptyState(&html, "No winning \(environmentNoun) postbacks in this range.")
                        return
                    }
                    html.element("ul", ["class": "legend"]) { html in
                        for entry in series {
                            html.element("li") { html in
                                html.element(
                                    "span",
                                    [
                                        "class": "swatch-line \(entry.style)\(entry.isDashed ? " dashed" : "")",
                                        "aria-hidden": "true",
                                    ], text: "")
                                html.text(entry.name)
                            }
                        }
                    }
                    DayLineChart(
                        id: "chart-null-share", title: "Share of null conversion values per day by ad network",
                        description: "Lines per ad network: null-value postbacks as a percentage of winning postbacks, per day.",
                        days: days, series: series, partNoun: "null values of", wholeNoun: "winning postbacks"
                    ).render(into: &html)
                }, table: table)
        }
    }

    func renderNonWinning(_ html: inout HTMLWriter) {
        let ranked = model.networksByVolume
        section(
            &html, id: "non-winning", title: "Non-winning share per ad network",
            note: "SKAdNetwork 3.0 and later, and AdAttributionKit, also send postbacks to ad networks that showed an ad but "
                + "did not win the install. They carry no conversion value and are not installs. Share = non-winning ÷ all "
                + "postbacks of the network. Before SKAdNetwork 3.0 every postback is a winner."
        ) { html in
            var table = FiguresTable(
                id: "table-non-winning", caption: "Non-winning postbacks per ad network",
                columns: [
                    .text("Ad network"), .number("Non-winning"), .number("Postbacks"), .number("Share"),
                    .number("Installs"), .number("Redownloads"), .number("Re-engagements"),
                ])
            var rows: [RowBarChart.Row] = []
            var listed = ranked.prefix(Self.entriesListed).map { (Self.networkName($0), model.networkTotals[$0]!) }
            let rest = ranked.dropFirst(Self.entriesListed)
            if !rest.isEmpty {
                var counts = NetworkDayCounts()
                for network in rest { counts.add(model.networkTotals[network]!) }
                listed.append(("Other networks (\(rest.count))", counts))
            }
            for (index, (name, counts)) in listed.enumerated() {
                table.add([
                    name, NumberFormat.count(counts.losses), NumberFormat.count(counts.postbacks),
                    NumberFormat.percent(counts.losses, of: counts.postbacks), NumberFormat.count(counts.installs),
                    NumberFormat.count(counts.redownloads), NumberFormat.count(counts.reengagements),
                ])
                rows.append(
                    RowBarChart.Row(
                        label: name, sublabel: nil, value: NumberFormat.ratio(counts.losses, of: counts.postbacks) * 100,
                        valueText: NumberFormat.percent(counts.losses, of: counts.postbacks),
                        tooltip:
                            "\(name): \(NumberFormat.count(counts.losses)) non-winning of \(NumberFormat.count(counts.postbacks)) postbacks",
                        style: ReportStyle.series(index)))
            }
            let totals = model.totals
            table.footer = [
                "All networks", NumberFormat.count(totals.losses), NumberFormat.count(totals.postbacks),
                NumberFormat.percent(totals.losses, of: totals.postbacks), NumberFormat.count(totals.installs),
                NumberFormat.count(totals.redownloads), NumberFormat.count(totals.reengagements),
            ]
            panel(
                &html,
                chart: { html in
                    guard !rows.isEmpty else {
                        emptyState(&html, "No \(environmentNoun) postbacks in this range.")
                        return
                    }
                    RowBarChart(
                        id: "chart-non-winning", title: "Non-winning postbacks as a share of each ad network's postbacks",
                        description: "Horizontal bars, one per ad network: the percentage of its postbacks that did not win.",
                        rows: rows, isPercent: true
                    ).render(into: &html)
                }, table: table)
        }
    }
}
