/// Conversion value distributions per campaign: fine values as a heat map, coarse values as shares
/// per postback window.
extension ReportPage {
    func renderFineValues(_ html: inout HTMLWriter) throws(ReportError) {
        let rows = try campaignRows { $0.fineTotal > 0 }
        section(
            &html, id: "fine", title: "Fine conversion values per campaign",
            note: "Fine values (0–63) come only in the first postback, and only when the install's crowd is large enough for "
                + "Apple to send them. Each row is one campaign; a cell is shaded by that value's share of the campaign's fine "
                + "values, so large and small campaigns compare. Hover a cell for its count and the schema's label. Postbacks "
                + "with a coarse value or none are not in this chart."
        ) { html in fineValuePanel(&html, rows: rows) }
    }

    /// The fine-value heat map of `rows` beside its table. On a development page (`labelsDevelopment`)
    /// the ids, title, caption, legend and columns say development.
    func fineValuePanel(_ html: inout HTMLWriter, rows: [CampaignRow]) {
        let (prefix, postbacks) = labelsDevelopment ? ("development-", "Development postbacks") : ("", "Postbacks")
        let fineValues = labelsDevelopment ? "development fine values" : "fine values"
        var table = FiguresTable(
            id: "table-\(prefix)fine",
            caption: labelsDevelopment
                ? "Development postbacks by campaign and fine value (development)" : "Postbacks by campaign and fine value",
            columns: campaignColumns + [
                .number("Value"), .longText(labelsDevelopment ? "Label (development schema decode)" : "Label"),
                .number(postbacks), .number(labelsDevelopment ? "Share of development fine values" : "Share"),
            ])
        for row in rows {
            let total = row.stats.fineTotal
            for (value, count) in row.stats.fine.enumerated() where count > 0 {
                table.add(
                    campaignCells(row) + [
                        String(value), Self.labels(row.stats.fineLabels[value]),
                        NumberFormat.count(count), NumberFormat.percent(count, of: total),
                    ])
            }
        }
        panel(
            &html,
            chart: { html in
                guard !rows.isEmpty else {
                    emptyState(
                        &html,
                        labelsDevelopment
                            ? "No development fine conversion values in this range." : "No fine conversion values in this range.")
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
                    id: "chart-\(prefix)fine",
                    title: labelsDevelopment
                        ? "Development fine conversion values per campaign (development)" : "Fine conversion values per campaign",
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

    func renderCoarseValues(_ html: inout HTMLWriter) throws(ReportError) {
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
