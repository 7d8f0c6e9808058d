import AggregateSchema

/// The first screen's answer to "which campaigns bring installs and revenue": the top campaigns by
/// installs (then revenue), each with its ad network, installs, revenue to date and per install
/// (`HeadlineRevenue`) and null share; the rest summed in one row, so the table adds up to the headline.
extension ReportPage {
    /// At most this many currencies get columns of their own (amounts of two currencies are never added).
    static let currenciesShown = 3

    func renderTopCampaigns(_ html: inout HTMLWriter) throws(ReportError) {
        let keys = model.campaignsByInstalls
        let rows = try rows(of: keys)
        let currencies = Array(
            model.revenueByCurrency.filter { !$0.key.isEmpty && $0.value.valuedPostbacks > 0 }
                .sorted { lhs, rhs in
                    let (left, right) = (lhs.value.toDate.estimate, rhs.value.toDate.estimate)
                    return left != right ? left > right : lhs.key < rhs.key
                }
                .map(\.key).prefix(Self.currenciesShown))
        var all = CampaignStats()
        for row in rows { try all.add(row.stats) }
        // With spend: each row's return to date, from its install cohorts in the range.
        let showsROAS = model.cohorts.hasSpend
        var rowROAS: [String] = []
        if showsROAS {
            for key in keys.prefix(request.topCampaigns) {
                rowROAS.append(model.cohorts.campaigns[key].map(Self.latestROASText) ?? "–")
            }
            if keys.count > request.topCampaigns {
                var rest = CohortStats()
                for key in keys.dropFirst(request.topCampaigns) {
                    if let stats = model.cohorts.campaigns[key] { try rest.add(stats) }
                }
                rowROAS.append(Self.latestROASText(rest))
            }
        }
        html.element("section", ["id": "top-campaigns", "aria-labelledby": "top-campaigns-heading"]) { html in
            html.element("h2", ["id": "top-campaigns-heading", "class": "first"], text: labelled("Top campaigns by installs"))
            guard !rows.isEmpty else {
                emptyState(&html, "No \(environmentNoun) postbacks in this range.")
                return
            }
            var table = FiguresTable(
                id: "table-top-campaigns",
                caption:
                    "\(keys.count > request.topCampaigns ? "The \(request.topCampaigns) of \(NumberFormat.count(keys.count))" : "All \(keys.count)") "
                    + "campaigns with most installs, then revenue; \(HeadlineRevenue.shortDefinition); "
                    + HeadlineRevenue.perInstallDefinition,
                columns: campaignColumns + [.number("Installs")]
                    + currencies.flatMap {
                        [FiguresTable.Column.number("\(HeadlineRevenue.name), \($0)"), .number("Per install, \($0)")]
                    }
                    + [.number("Null share"), .number("Postbacks")] + (showsROAS ? [.number("ROAS")] : []))
            func cells(_ stats: CampaignStats) -> [String] {
                [NumberFormat.count(stats.counts.installs)]
                    + currencies.flatMap { currency -> [String] in
                        guard let revenue = stats.headline[currency], revenue.valuedPostbacks > 0 else { return ["–", "–"] }
                        return [revenue.toDate.shownEstimate, revenue.perInstall]
                    }
                    + [
                        NumberFormat.percent(stats.counts.nullValues, of: stats.counts.winners),
                        NumberFormat.count(stats.counts.postbacks),
                    ]
            }
            for (index, row) in rows.enumerated() {
                table.add(campaignCells(row) + cells(row.stats) + (showsROAS ? [rowROAS[index]] : []))
            }
            table.footer =
                ["All campaigns", ""] + (model.appIDs.count > 1 ? [""] : []) + cells(all)
                + (showsROAS ? [Self.latestROASText(model.cohorts.total)] : [])
            if showsROAS {
                table.caption +=
                    "; ROAS: revenue estimate ÷ spend of the campaign's install cohorts in the range, "
                    + "to date, \(Self.immatureMarker) when a cohort is not final"
            }
            place(table, &html)
            renderTopModeled(&html, rows: rows, all: all, currencies: currencies)
            renderTopByROAS(&html)
        }
        html.newline()
    }

    /// The same campaigns' modeled revenue (docs/modeling.md), in a table of its own right after them:
    /// each measured figure again with the modeled one and its 90% interval beside it, labelled modeled.
    /// The campaigns and their order are the measured table's; no modeled figure is in that table.
    private func renderTopModeled(
        _ html: inout HTMLWriter, rows: [CampaignRow], all: CampaignStats, currencies: [String]
    ) {
        let modeled = currencies.filter { all.modeled[$0].map { $0.modeledNulls + $0.unmodeledNulls > 0 } ?? false }
        guard !modeled.isEmpty else { return }
        var table = FiguresTable(
            id: "table-top-campaigns-modeled",
            caption:
                "Modeled, not measured: the same campaigns' revenue to date with the modeled value of their null "
                + "postbacks added, and its 90% interval (docs/modeling.md); the measured figures above are unchanged",
            columns: campaignColumns
                + modeled.flatMap { currency -> [FiguresTable.Column] in
                    [
                        .number("\(HeadlineRevenue.name), \(currency)"), .number("Modeled revenue, \(currency)"),
                        .number("Modeled 90% interval, \(currency)"),
                    ]
                })
        func cells(_ stats: CampaignStats) -> [String] {
            modeled.flatMap { currency -> [String] in
                let measured = stats.headline[currency]
                let shown = measured.map { $0.valuedPostbacks > 0 ? $0.toDate.shownEstimate : "–" } ?? "–"
                guard let model = stats.modeled[currency], model.isModeled,
                    let total = model.total(measured: measured?.toDate.estimate ?? .zero)
                else {
                    let unmodeled = (stats.modeled[currency]?.unmodeledNulls ?? 0) > 0
                    return [shown, unmodeled ? "too little data" : "–", "–"]
                }
                return [
                    shown, NumberFormat.money(total.estimate),
                    "\(NumberFormat.money(total.low))–\(NumberFormat.money(total.high))",
                ]
            }
        }
        for row in rows { table.add(campaignCells(row) + cells(row.stats)) }
        table.footer = ["All campaigns", ""] + (model.appIDs.count > 1 ? [""] : []) + cells(all)
        place(table, &html)
    }
}
