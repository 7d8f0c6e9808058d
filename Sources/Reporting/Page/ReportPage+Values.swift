/// Conversion value distributions per campaign: fine values as a heat map, coarse values as shares
/// per postback window.
extension ReportPage {
    func renderFineValues(_ html: inout HTMLWriter) throws {
        let rows = try campaignRows { $0.fineTotal > 0 }
        section(
            &html, id: "fine", title: "Fine conversion values per campaign",
            note: "Fine values (0–63) come only in the first postback, and only when the install's crowd is large enough for "
                + "Apple to send them. Each row is one campaign; a cell is shaded by that value's share of the campaign's fine "
                + "values, so large and small campaigns compare. Hover a cell for its count and the schema's label. Postbacks "
                + "with a coarse value or none are not in this chart."
        ) { html in fineValuePanel(&html, rows: rows) }
    }

    /// How many fine values of a campaign the table lists by value; the rest are one row (the heat
    /// map shows every value, each cell's count in its tooltip).
    static let fineValuesListed = 5

    /// The fine-value heat map of `rows` beside its table.
    func fineValuePanel(_ html: inout HTMLWriter, rows: [CampaignRow]) {
        let fineValues = isDevelopment ? "development fine values" : "fine values"
        var table = FiguresTable(
            id: "table-fine",
            caption: "Postbacks by campaign and fine value (each campaign's \(Self.fineValuesListed) most "
                + "frequent values, then the rest)",
            columns: campaignColumns + [.number("Value"), .longText("Label"), .number("Postbacks"), .number("Share")])
        for row in rows {
            let total = row.stats.fineTotal
            let values = row.stats.fine.enumerated().filter { $0.element > 0 }
                .sorted { $0.element != $1.element ? $0.element > $1.element : $0.offset < $1.offset }
            for (value, count) in values.prefix(Self.fineValuesListed) {
                table.add(
                    campaignCells(row) + [
                        String(value), Self.labels(row.stats.fineLabels[value]),
                        NumberFormat.count(count), NumberFormat.percent(count, of: total),
                    ])
            }
            let rest = values.dropFirst(Self.fineValuesListed)
            if !rest.isEmpty {
                let count = rest.reduce(0) { $0 + $1.element }
                table.add(
                    campaignCells(row) + [
                        "other", "\(rest.count) other values", NumberFormat.count(count), NumberFormat.percent(count, of: total),
                    ])
            }
        }
        panel(
            &html,
            chart: { html in
                guard !rows.isEmpty else {
                    emptyState(&html, "No \(environmentNoun) fine conversion values in this range.")
                    return
                }
                html.element("ul", ["class": "legend"]) { html in
                    for (bin, name) in FineValueHeatmap.binLegends.enumerated() {
                        html.element("li") { html in
                            html.element("span", ["class": "swatch heat-\(bin + 1)", "aria-hidden": "true"], text: "")
                            html.text(name)
                        }
                    }
                    html.element("li", text: "of the campaign's \(fineValues); n = \(fineValues)")
                }
                FineValueHeatmap(
                    id: "chart-fine", title: labelled("Fine conversion values per campaign"),
                    description:
                        "Heat map: rows are campaigns, columns the fine values 0 to 63, shaded by share of the campaign's \(fineValues).",
                    rows: rows.map { row in
                        FineValueHeatmap.Row(
                            label: row.label, sublabel: row.sublabel, counts: row.stats.fine,
                            labels: row.stats.fineLabels.mapValues { Self.labels($0) })
                    }, valuesNoun: fineValues
                ).render(into: &html)
            }, table: table)
    }

    func renderCoarseValues(_ html: inout HTMLWriter) throws {
        let rows = try campaignRows { stats in (0..<CampaignStats.windows).contains { stats.coarseTotal(window: $0) > 0 } }
        section(
            &html, id: "coarse", title: "Coarse conversion values per campaign",
            note: "Coarse values (low, medium, high) are what Apple sends when a fine value would reveal too much, and in "
                + "postbacks 2 and 3. Each bar splits a campaign's coarse values in one postback window into the three levels. "
                + "Windows are shown apart because a schema may give each window its own meaning. Withheld (null) values are "
                + "in the null-value chart."
        ) { html in
            var table = FiguresTable(
                id: "table-coarse", caption: "Coarse values by campaign and postback window",
                columns: campaignColumns + [
                    .number("Postback"), .number("Low"),
                    .number("Medium"), .number("High"), .number("Total"),
                ])
            for row in rows {
                for window in 0..<CampaignStats.windows where row.stats.coarseTotal(window: window) > 0 {
                    let counts = row.stats.coarse[window]
                    table.add(
                        campaignCells(row) + [String(window + 1)] + counts.map(NumberFormat.count)
                            + [NumberFormat.count(row.stats.coarseTotal(window: window))])
                }
            }
            panel(
                &html,
                chart: { html in
                    guard !rows.isEmpty else {
                        emptyState(&html, "No coarse conversion values in this range.")
                        return
                    }
                    Legend.render(
                        CoarseShareChart.levelNames.enumerated().map { ("coarse-\($0.offset)", $0.element) }, into: &html)
                    CoarseShareChart(
                        id: "chart-coarse", title: "Coarse conversion values per campaign and postback window",
                        description: "For each campaign and postback window, the shares of low, medium and high coarse values.",
                        rows: rows.map { row in
                            CoarseShareChart.Row(
                                label: row.label, sublabel: row.sublabel, counts: row.stats.coarse,
                                labels: row.stats.coarseLabels.map { $0.map { Self.labels($0) } })
                        }
                    ).render(into: &html)
                }, table: table)
        }
    }

    /// Labels of one value across schemas, sorted: `install_only` or `payer / spender`.
    static func labels(_ labels: Set<String>?) -> String { (labels ?? []).sorted().joined(separator: " / ") }
}
