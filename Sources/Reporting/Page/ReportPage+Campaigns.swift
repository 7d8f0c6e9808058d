import AggregateSchema
import Postbacks

/// What a marketer asks first: each app's campaigns side by side, the daily trend of installs and
/// revenue, and where installs come from.
extension ReportPage {
    func renderCampaigns(_ html: inout HTMLWriter) throws {
        var apps: [String: NetworkDayCounts] = [:]
        for (key, stats) in model.campaigns { apps[key.appID, default: NetworkDayCounts()].add(stats.counts) }
        let ranked = apps.keys.sorted {
            apps[$0]!.installs != apps[$1]!.installs ? apps[$0]!.installs > apps[$1]!.installs : $0 < $1
        }
        let ranking = model.campaignsByInstalls
        var appRows: [String: [CampaignRow]] = [:]
        for app in ranked { appRows[app] = try rows(of: ranking.filter { $0.appID == app }) }
        section(
            &html, id: "campaigns", title: "Campaigns by app",
            note: "Each app's campaigns, most installs first (\(environmentNoun) postbacks only); the \(request.topCampaigns) "
                + "largest by name, the rest summed in one row. Revenue per currency is \(HeadlineRevenue.definition), "
                + "with its min–max range; the revenue section below keeps the windows apart. Null share = null values ÷ "
                + "winning postbacks. Coarse values and non-winning postbacks have sections of their own below."
        ) { html in
            guard !apps.isEmpty else {
                emptyState(&html, "No \(environmentNoun) postbacks in this range.")
                return
            }
            for app in ranked {
                html.element("h3", text: labelled("App \(app)"))
                var table = FiguresTable(
                    id: "table-campaigns-\(app)", caption: "Campaigns of app \(app)",
                    columns: [
                        .name("Campaign"), .name("Ad network"), .number("Postbacks"), .number("Installs"),
                        .number("Redownloads"), .number("Re-engagements"), .longText("\(HeadlineRevenue.name) (min–max)"),
                        .number("Null share"),
                    ])
                for row in appRows[app]! {
                    let stats = row.stats
                    table.add([
                        row.label, row.isOthers ? row.sublabel ?? "" : Self.networkName(row.network),
                        NumberFormat.count(stats.counts.postbacks),
                        NumberFormat.count(stats.counts.installs), NumberFormat.count(stats.counts.redownloads),
                        NumberFormat.count(stats.counts.reengagements), Self.revenueText(stats.headline),
                        NumberFormat.percent(stats.counts.nullValues, of: stats.counts.winners),
                    ])
                }
                let total = apps[app]!
                table.footer = [
                    "All campaigns", "", NumberFormat.count(total.postbacks), NumberFormat.count(total.installs),
                    NumberFormat.count(total.redownloads), NumberFormat.count(total.reengagements), "",
                    NumberFormat.percent(total.nullValues, of: total.winners),
                ]
                place(table, &html)
            }
        }
    }

    /// Revenue to date per currency: `USD 120.00 (80.00–160.00)`, `EUR ≥ 75.00` for a lower bound,
    /// `EUR 150.00 (at least 100.00, no upper bound)`; `unknown` when no value decoded.
    static func revenueText(_ revenue: [String: HeadlineRevenue]) -> String {
        var parts: [String] = []
        for currency in revenue.keys.sorted() where !currency.isEmpty {
            let sum = revenue[currency]!.toDate
            guard sum.valuedPostbacks > 0 else { continue }
            parts.append("\(currency) \(sum.shownEstimate)" + (sum.isLowerBound ? "" : " (\(sum.shownRange))"))
        }
        return parts.isEmpty ? "unknown" : parts.joined(separator: "; ")
    }

    func renderTrend(_ html: inout HTMLWriter) {
        let days = model.rangeDays
        let currencies = model.dayRevenue.keys.filter { !$0.isEmpty }.sorted()
        section(
            &html, id: "trend", title: "Installs and revenue per day",
            note: "Installs (winning first postbacks of downloads) per UTC day received, with the day's revenue per currency: "
                + "\(HeadlineRevenue.definition). Days without aggregates are gaps, not zeros."
        ) { html in
            var table = FiguresTable(
                id: "table-trend", caption: "Installs and revenue per day",
                columns: [
                    .text("Day"), .number("Postbacks"), .number("Installs"), .number("Redownloads"),
                    .number("Re-engagements"),
                ] + currencies.map { .number("\(HeadlineRevenue.name), \($0)") })
            for day in days {
                if model.unavailableDays.contains(day) {
                    table.add([day.description, "–", "–", "–", "–"] + currencies.map { _ in "–" })
                    continue
                }
                let counts = model.dayTotals[day] ?? NetworkDayCounts()
                table.add(
                    [
                        day.description, NumberFormat.count(counts.postbacks), NumberFormat.count(counts.installs),
                        NumberFormat.count(counts.redownloads), NumberFormat.count(counts.reengagements),
                    ]
                        + currencies.map { model.dayRevenue[$0]?[day]?.toDate.shownEstimate ?? NumberFormat.money(.zero) })
            }
            table.footer =
                [
                    "Total", NumberFormat.count(model.totals.postbacks), NumberFormat.count(model.totals.installs),
                    NumberFormat.count(model.totals.redownloads), NumberFormat.count(model.totals.reengagements),
                ]
                + currencies.map { model.revenueByCurrency[$0]?.toDate.shownEstimate ?? NumberFormat.money(.zero) }
            panel(
                &html,
                chart: { html in
                    guard model.totals.installs > 0 else {
                        emptyState(&html, "No installs in this range.")
                        return
                    }
                    DayColumnChart(
                        id: "chart-trend-installs", title: "Installs per day",
                        description: "Columns, one per day from \(model.from) to \(model.to); "
                            + "\(NumberFormat.count(model.totals.installs)) installs in all.",
                        days: days, unavailable: model.unavailableDays,
                        series: [
                            DayColumnChart.Series(
                                name: "Installs", style: "s0",
                                values: days.map { model.dayTotals[$0]?.installs ?? 0 })
                        ],
                        noun: "installs"
                    ).render(into: &html)
                }, table: table)
        }
    }

    /// Only when some postback carries `country_code` (AdAttributionKit and SKAdNetwork since 2025).
    func renderCountries(_ html: inout HTMLWriter) {
        guard !model.countries.isEmpty else { return }
        section(
            &html, id: "countries", title: "Countries",
            note:
                "\(environmentNoun.capitalizedFirst) postbacks by the country_code Apple sends (when the crowd is large enough); postbacks without "
                + "one are counted apart, not spread over the countries."
        ) { html in
            let total = model.totals.postbacks
            let ranked = model.countries.keys.sorted {
                model.countries[$0]!.postbacks != model.countries[$1]!.postbacks
                    ? model.countries[$0]!.postbacks > model.countries[$1]!.postbacks : $0 < $1
            }
            var table = FiguresTable(
                id: "table-countries", caption: "Postbacks and installs by country",
                columns: [.text("Country"), .number("Postbacks"), .number("Installs"), .number("Share")])
            var rows: [RowBarChart.Row] = []
            for country in ranked.prefix(Self.entriesListed) {
                let counts = model.countries[country]!
                table.add([
                    country, NumberFormat.count(counts.postbacks), NumberFormat.count(counts.installs),
                    NumberFormat.percent(counts.postbacks, of: total),
                ])
                rows.append(
                    RowBarChart.Row(
                        label: country, sublabel: nil, value: Double(counts.postbacks),
                        valueText: NumberFormat.count(counts.postbacks),
                        tooltip: "\(country): \(NumberFormat.count(counts.postbacks)) postbacks", style: "s0"))
            }
            let rest = ranked.dropFirst(Self.entriesListed)
            if !rest.isEmpty {
                var counts = NetworkDayCounts()
                for country in rest { counts.add(model.countries[country]!) }
                table.add([
                    "Other countries (\(rest.count))", NumberFormat.count(counts.postbacks), NumberFormat.count(counts.installs),
                    NumberFormat.percent(counts.postbacks, of: total),
                ])
            }
            if model.withoutCountry.postbacks > 0 {
                table.add([
                    "(no country)", NumberFormat.count(model.withoutCountry.postbacks),
                    NumberFormat.count(model.withoutCountry.installs),
                    NumberFormat.percent(model.withoutCountry.postbacks, of: total),
                ])
            }
            table.footer = [
                "Total", NumberFormat.count(total), NumberFormat.count(model.totals.installs), total > 0 ? "100.0%" : "–",
            ]
            panel(
                &html,
                chart: { html in
                    RowBarChart(
                        id: "chart-countries", title: "Postbacks by country",
                        description: "Horizontal bars, one per country, most postbacks first.",
                        rows: rows, isPercent: false, hasWideLabels: false
                    ).render(into: &html)
                }, table: table)
        }
    }
}
