/// Revenue per campaign with its min–max range, one chart per currency.
extension ReportPage {
    func renderRevenue(_ html: inout HTMLWriter) throws {
        let currencies = Set(model.campaigns.values.flatMap { $0.revenue.keys.map(\.currency) }).filter { !$0.isEmpty }.sorted()
        var charts: [(currency: String, rows: [CampaignRow])] = []
        for currency in currencies {
            let rows = try campaignRows(
                including: { stats in stats.revenue.contains { $0.key.currency == currency && !$0.value.isEmpty } },
                rankedBy: { stats in
                    Int(stats.revenue.filter { $0.key.currency == currency }.values.reduce(0) { $0 + $1.estimate.micros })
                })
            charts.append((currency, rows))
        }
        let unscheduled = model.revenueByCurrency[""]?.unknownPostbacks ?? 0
        section(
            &html, id: "revenue", title: "Revenue estimate per campaign",
            note: "Revenue is decoded from conversion values with the app's schema: each value stands for a range (min–max) "
                + "and a point estimate, summed exactly. The bar is the estimate, the line the range; an arrow means the "
                + "range has no upper bound. Postbacks whose value Apple withheld (null) or that did not decode are installs "
                + "with unknown revenue: they are counted in the table, never as zero. This section keeps the postback windows "
                + "apart; the headline, the tables above and ROAS show \(HeadlineRevenue.definition)."
        ) { html in
            if charts.isEmpty {
                emptyState(&html, "No revenue in this range: no postback had a value a schema decodes.")
            }
            if unscheduled > 0 {
                html.element(
                    "p", ["class": "note"],
                    text:
                        "\(NumberFormat.count(unscheduled)) postbacks have no schema for their app and date, so their revenue is unknown."
                )
            }
            for (currency, rows) in charts {
                html.element("h3", text: "Revenue in \(currency)")
                renderRevenuePanel(&html, currency: currency, rows: rows)
            }
        }
    }

    private func renderRevenuePanel(_ html: inout HTMLWriter, currency: String, rows: [CampaignRow]) {
        func cell(_ row: CampaignRow, _ window: Int) -> RevenueSum? {
            row.stats.revenue[CampaignStats.RevenueKey(currency: currency, window: window)]
        }
        var table = FiguresTable(
            id: "table-revenue-\(currency)", caption: "Revenue in \(currency) by campaign and postback window",
            columns: campaignColumns + [
                .number("Postback"), .number("With value"),
                .number("Unknown value"), .number("Min"), .number("Estimate"), .number("Max"),
            ])
        for row in rows {
            for window in 0..<CampaignStats.windows {
                guard let sum = cell(row, window), !sum.isEmpty else { continue }
                table.add(
                    campaignCells(row) + [
                        String(window + 1), NumberFormat.count(sum.valuedPostbacks),
                        NumberFormat.count(sum.unknownPostbacks), NumberFormat.exactMoney(sum.minimum),
                        NumberFormat.exactMoney(sum.estimate),
                        sum.maximum.map(NumberFormat.exactMoney) ?? "no upper bound",
                    ])
            }
        }
        // The sum of the other campaigns is in the table; drawn, it would dwarf every campaign's bar.
        let charted = rows.filter { !$0.isOthers }
        let others = rows.count - charted.count
        panel(
            &html,
            chart: { html in
                if others > 0 {
                    html.element(
                        "p", ["class": "note"],
                        text: "The \(charted.count) campaigns with the largest estimates; "
                            + "the other \(rows.last!.sublabel ?? "campaigns") are summed in the table's last rows (Other campaigns)."
                    )
                }
                html.element("ul", ["class": "legend"]) { html in
                    html.element("li") { html in
                        html.element("span", ["class": "swatch s0", "aria-hidden": "true"], text: "")
                        html.text("estimate")
                    }
                    html.element("li", text: "├─┤ min–max range; ─▶ no upper bound")
                }
                RevenueRangeChart(
                    id: "chart-revenue-\(currency)", title: "Revenue estimate in \(currency) per campaign and postback window",
                    description:
                        "For each campaign and postback window, a bar to the revenue estimate and a line over its minimum to maximum.",
                    currency: currency,
                    rows: charted.map { row in
                        RevenueRangeChart.Row(
                            label: row.label, sublabel: row.sublabel, cells: (0..<CampaignStats.windows).map { cell(row, $0) })
                    }
                ).render(into: &html)
            }, table: table)
    }
}
